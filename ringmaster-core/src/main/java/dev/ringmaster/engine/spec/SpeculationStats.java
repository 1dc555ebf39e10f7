package dev.ringmaster.engine.spec;

/**
 * How speculation went for one sequence.
 *
 * @param verifySteps target forward passes after the prefill (each one checks a draft, possibly
 *     empty, and yields at least one token)
 * @param draftTokens draft tokens proposed, all verify steps together
 * @param acceptedTokens draft tokens the target accepted
 * @param draftMs time spent proposing drafts (the draft model's forwards, or the n-gram search)
 */
public record SpeculationStats(
    long verifySteps, long draftTokens, long acceptedTokens, double draftMs) {
  /**
   * Mean accepted draft tokens per verify step plus one: the tokens one target forward yields (1
   * without speculation; a verify step whose drafter proposed nothing counts with 0 accepted).
   */
  public double acceptLength() {
    return verifySteps == 0 ? 0 : 1 + (double) acceptedTokens / verifySteps;
  }

  /** Accepted share of the proposed draft tokens (0 when none was proposed). */
  public double acceptRate() {
    return draftTokens == 0 ? 0 : (double) acceptedTokens / draftTokens;
  }
}
