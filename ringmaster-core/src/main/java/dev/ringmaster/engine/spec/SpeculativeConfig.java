package dev.ringmaster.engine.spec;

/**
 * How one sequence speculates.
 *
 * @param algorithm where the drafts come from
 * @param numDraftTokens draft tokens proposed per verify pass (the target then runs this many plus
 *     one tokens in one forward)
 * @param ngramMinMatch shortest suffix of the context an n-gram draft matches
 * @param ngramMaxMatch longest suffix tried first
 */
public record SpeculativeConfig(
    SpeculativeAlgorithm algorithm, int numDraftTokens, int ngramMinMatch, int ngramMaxMatch) {
  /** Draft tokens per verify when none is given. */
  public static final int DEFAULT_NUM_DRAFT_TOKENS = 4;

  /** Shortest n-gram match when none is given. */
  public static final int DEFAULT_NGRAM_MIN_MATCH = 1;

  /** Longest n-gram match when none is given. */
  public static final int DEFAULT_NGRAM_MAX_MATCH = 4;

  /** Validates ranges and names the bad field. */
  public SpeculativeConfig {
    java.util.Objects.requireNonNull(algorithm, "algorithm");
    if (numDraftTokens < 1) {
      throw new IllegalArgumentException(
          "speculative num draft tokens must be >= 1, got " + numDraftTokens);
    }
    if (ngramMinMatch < 1 || ngramMaxMatch < ngramMinMatch) {
      throw new IllegalArgumentException(
          "n-gram match lengths must satisfy 1 <= min <= max, got min "
              + ngramMinMatch
              + " max "
              + ngramMaxMatch);
    }
  }

  /** {@code algorithm} with {@code numDraftTokens} drafts and the default n-gram match range. */
  public static SpeculativeConfig of(SpeculativeAlgorithm algorithm, int numDraftTokens) {
    return new SpeculativeConfig(
        algorithm, numDraftTokens, DEFAULT_NGRAM_MIN_MATCH, DEFAULT_NGRAM_MAX_MATCH);
  }
}
