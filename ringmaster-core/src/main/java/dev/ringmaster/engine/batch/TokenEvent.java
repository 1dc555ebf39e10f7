package dev.ringmaster.engine.batch;

/**
 * One generated token.
 *
 * @param token the token id
 * @param index its position among the generated tokens (0 for the first)
 * @param stopToken whether it is an end-of-sequence or stop token that ends the request
 * @param logprob natural log-probability of the token under the model (raw logits, before
 *     temperature), or NaN when logprobs were not requested
 * @param topIds the most likely tokens at this step, best first (empty unless requested)
 * @param topLogprobs their log-probabilities
 */
public record TokenEvent(
    int token, int index, boolean stopToken, float logprob, int[] topIds, float[] topLogprobs) {}
