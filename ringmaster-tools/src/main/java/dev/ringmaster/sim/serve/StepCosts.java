package dev.ringmaster.sim.serve;

/** How long one engine step takes, for the serving model. */
public interface StepCosts {
  /**
   * Microseconds of one step: {@code decodeRows} sequences decoding one token each over {@code
   * decodeContext} cached tokens on average, beside {@code prefillTokens} prompt tokens of {@code
   * prefillSequences} prompts whose chunks start after {@code prefillStart} cached tokens on
   * average.
   */
  double stepUs(
      int decodeRows,
      int decodeContext,
      int prefillTokens,
      int prefillSequences,
      int prefillStart,
      boolean graphed);
}
