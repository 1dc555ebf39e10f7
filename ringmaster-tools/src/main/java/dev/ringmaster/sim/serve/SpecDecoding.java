package dev.ringmaster.sim.serve;

/**
 * Speculative decoding: {@code numSteps} draft forwards propose a tree of {@code numDraftTokens}
 * tokens, one target forward verifies all of them, and on average {@code acceptLength} tokens (the
 * bonus token included) are kept per cycle.
 *
 * @param algorithm EAGLE3 (a one-layer draft head) or MTP (the model's own next-token layer)
 * @param numSteps draft forwards per cycle
 * @param numDraftTokens tokens the verify forward checks per sequence
 * @param topK branching of each draft step (1 = a chain)
 * @param acceptLength mean tokens kept per cycle
 */
public record SpecDecoding(
    String algorithm, int numSteps, int numDraftTokens, int topK, double acceptLength) {

  /** Validates and derives. */
  public SpecDecoding {
    if (!algorithm.equals("EAGLE3") && !algorithm.equals("MTP")) {
      throw new IllegalArgumentException("speculative algorithm must be EAGLE3 or MTP");
    }
    if (numSteps < 1 || numDraftTokens < 2 || topK < 1) {
      throw new IllegalArgumentException("speculative steps >= 1, draft tokens >= 2, topk >= 1");
    }
    if (acceptLength < 1 || acceptLength > numDraftTokens) {
      throw new IllegalArgumentException(
          "accept length must be between 1 and the number of draft tokens");
    }
  }

  /** Default branching: a chain when the draft tokens fit one per step, else a tree. */
  public static int defaultTopK(int numSteps, int numDraftTokens) {
    return numDraftTokens <= numSteps + 1 ? 1 : (int) Math.ceil((numDraftTokens - 1.0) / numSteps);
  }
}
