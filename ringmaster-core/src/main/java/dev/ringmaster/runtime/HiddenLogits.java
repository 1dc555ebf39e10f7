package dev.ringmaster.runtime;

/**
 * A forward step's logits and the final hidden states they were computed from.
 *
 * @param logits {@code [logitRows, vocab]} of the rows asked for
 * @param hidden {@code [tokens, hidden]}: every token of the step after the final norm (the LM
 *     head's input), in the step's token order
 */
public record HiddenLogits(float[] logits, float[] hidden) {}
