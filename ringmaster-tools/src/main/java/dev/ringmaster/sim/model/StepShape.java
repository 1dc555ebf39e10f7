package dev.ringmaster.sim.model;

/**
 * The work of one forward pass.
 *
 * @param tokens query tokens processed (decode: batch; verify: batch x draft tokens; prefill:
 *     chunk)
 * @param sequences sequences in the step (each reads its own KV cache once)
 * @param contextLen cached tokens each sequence's attention reads (its KV length)
 * @param attendedPerQuery tokens each query attends to on average (causal prefill: about half)
 * @param logitTokens tokens whose logits are computed (decode/verify: all; prefill: the last)
 * @param kvDtype KV cache dtype, bf16 or fp8
 * @param absorbedMla whether MLA runs in its absorbed (decode) form rather than expanding the
 *     latent
 */
public record StepShape(
    int tokens,
    int sequences,
    int contextLen,
    double attendedPerQuery,
    int logitTokens,
    String kvDtype,
    boolean absorbedMla) {

  /** A decode step: {@code batch} sequences, each with {@code queriesPerSeq} query tokens. */
  public static StepShape decode(int batch, int queriesPerSeq, int contextLen, String kvDtype) {
    return new StepShape(
        batch * queriesPerSeq, batch, contextLen, contextLen, batch * queriesPerSeq, kvDtype, true);
  }

  /** A prefill chunk of {@code chunk} tokens after {@code prefix} cached tokens of one sequence. */
  public static StepShape prefill(int chunk, int prefix, String kvDtype) {
    return new StepShape(chunk, 1, prefix + chunk, prefix + chunk / 2.0, 1, kvDtype, false);
  }
}
