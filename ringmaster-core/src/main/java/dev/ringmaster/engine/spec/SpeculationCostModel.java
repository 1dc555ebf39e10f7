package dev.ringmaster.engine.spec;

/**
 * What a target forward costs, as the {@link SpeculativePolicy#AUTO} policy sees it: a plain decode
 * step of {@code batch} sequences, and a verify step of as many sequences each running its last
 * token and {@code draftTokens} draft tokens.
 */
public interface SpeculationCostModel {
  /** Nanoseconds of one decode step of {@code batch} sequences (one token each). */
  double decodeNanos(int batch);

  /** Nanoseconds of one verify step of {@code batch} sequences ({@code draftTokens + 1} each). */
  double verifyNanos(int batch, int draftTokens);
}
