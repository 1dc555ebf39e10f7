package dev.ringmaster.sim.serve;

/**
 * Step times measured on one H200 for the served model of docs/cuda-performance.md ("Serving": V2-
 * Lite's shape with DeepSeek-V3's vocabulary, 2026-12-01): {@code bench one-batch}'s decode steps
 * at batch 1 / 16 / 64 / 128 (2.58 / 9.74 / 12.73 / 15.49 ms, input 512), linear between them, and
 * its 512-token prefill (22 ms, 43 us per prompt token). A step with prompt tokens adds their
 * prefill time to its decode rows' step. These feed the serving model alone, so that its queueing
 * and scheduling can be checked against {@code bench serve} apart from the forward model.
 */
final class MeasuredH200Steps implements StepCosts {
  private static final int[] BATCH = {1, 16, 64, 128};
  private static final double[] STEP_MS = {2.58, 9.74, 12.73, 15.49};
  private static final double PREFILL_US_PER_TOKEN = 22_000.0 / 512;

  @Override
  public double stepUs(
      int decodeRows,
      int decodeContext,
      int prefillTokens,
      int prefillSequences,
      int prefillStart,
      boolean graphed) {
    return decodeMs(decodeRows) * 1000 + prefillTokens * PREFILL_US_PER_TOKEN;
  }

  static double decodeMs(int batch) {
    if (batch == 0) {
      return 0;
    }
    if (batch <= BATCH[0]) {
      return STEP_MS[0];
    }
    for (int i = 1; i < BATCH.length; i++) {
      if (batch <= BATCH[i]) {
        double f = (double) (batch - BATCH[i - 1]) / (BATCH[i] - BATCH[i - 1]);
        return STEP_MS[i - 1] + f * (STEP_MS[i] - STEP_MS[i - 1]);
      }
    }
    int last = BATCH.length - 1;
    double slope = (STEP_MS[last] - STEP_MS[last - 1]) / (BATCH[last] - BATCH[last - 1]);
    return STEP_MS[last] + slope * (batch - BATCH[last]);
  }
}
