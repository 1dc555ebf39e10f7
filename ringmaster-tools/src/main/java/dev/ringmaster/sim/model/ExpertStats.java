package dev.ringmaster.sim.model;

/**
 * Expected expert activation under uniform routing: each of {@code T} tokens picks {@code k} of
 * {@code E} experts, so an expert is untouched with probability {@code (1 - k/E)^T} and the
 * expected number of distinct experts a step reads is {@code E * (1 - (1 - k/E)^T)}.
 */
public final class ExpertStats {
  private ExpertStats() {}

  /** Expected distinct experts touched by {@code tokens} tokens. */
  public static double expectedDistinct(int numExperts, int topK, double tokens) {
    if (tokens <= 0) {
      return 0;
    }
    double untouched = Math.pow(1.0 - (double) topK / numExperts, tokens);
    return numExperts * (1.0 - untouched);
  }

  /**
   * Expected distinct experts on one of {@code epSize} expert-parallel ranks, each holding {@code
   * numExperts / epSize} experts (the whole batch's routing seen by every rank).
   */
  public static double expectedDistinctPerRank(
      int numExperts, int topK, double tokens, int epSize) {
    return expectedDistinct(numExperts, topK, tokens) / epSize;
  }
}
