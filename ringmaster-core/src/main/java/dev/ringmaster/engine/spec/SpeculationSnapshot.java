package dev.ringmaster.engine.spec;

/**
 * What the batch engine's speculation did so far, and the state its policy decides from.
 *
 * @param algorithm where drafts come from
 * @param policy when the engine speculates
 * @param numDraftTokens draft tokens per request at most
 * @param margin the gain over plain decoding {@code AUTO} asks for (0.05 for 5%)
 * @param enabled whether the latest decision speculated
 * @param decisions decode steps decided so far
 * @param enabledDecisions of those, the steps that speculated
 * @param verifyRows requests' drafts verified (one per request and speculating step)
 * @param draftTokens draft tokens verified
 * @param acceptedTokens of those, the tokens the target accepted
 * @param acceptanceByPosition moving average of acceptance at each draft position (given proposed)
 * @param draftNanosPerToken moving average of the drafting time per draft token
 */
public record SpeculationSnapshot(
    SpeculativeAlgorithm algorithm,
    SpeculativePolicy policy,
    int numDraftTokens,
    double margin,
    boolean enabled,
    long decisions,
    long enabledDecisions,
    long verifyRows,
    long draftTokens,
    long acceptedTokens,
    double[] acceptanceByPosition,
    double draftNanosPerToken) {

  /** Mean tokens one verified draft yielded (accepted drafts plus the target's own); 0 if none. */
  public double acceptLength() {
    return verifyRows == 0 ? 0 : 1 + (double) acceptedTokens / verifyRows;
  }

  /** Share of decode steps that speculated, 0..1 (0 before any). */
  public double enabledFraction() {
    return decisions == 0 ? 0 : (double) enabledDecisions / decisions;
  }
}
