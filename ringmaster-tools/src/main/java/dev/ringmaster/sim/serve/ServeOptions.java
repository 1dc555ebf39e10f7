package dev.ringmaster.sim.serve;

/**
 * The server's scheduling flags, null where the engine derives them.
 *
 * @param maxRunningRequests {@code --max-running-requests}; null for the engine's rule ({@code
 *     ServingDefaults.maxRunningRequests}: at most half the KV pool's tokens and the largest
 *     captured decode graph)
 * @param memFractionStatic {@code --mem-fraction-static}, the share of GPU memory for weights plus
 *     KV cache; null for the engine's default from the GPU's memory, the prefill chunk and the
 *     largest graph
 * @param radixCache whether the prefix cache reuses cached prompt pages ({@code
 *     --disable-radix-cache} turns it off)
 * @param pageSize tokens per prefix-cache page (the engine's 64)
 * @param overlapSchedule whether the engine plans each step while the one before runs (serve's
 *     default; {@code --disable-overlap-schedule} turns it off): a request that reaches it during a
 *     step then joins the step after next
 */
public record ServeOptions(
    Integer maxRunningRequests,
    Double memFractionStatic,
    boolean radixCache,
    int pageSize,
    boolean overlapSchedule) {

  /** Validates. */
  public ServeOptions {
    if (maxRunningRequests != null && maxRunningRequests < 1) {
      throw new IllegalArgumentException(
          "--max-running-requests must be at least 1, got " + maxRunningRequests);
    }
    if (memFractionStatic != null && !(memFractionStatic > 0 && memFractionStatic < 1)) {
      throw new IllegalArgumentException(
          "--mem-fraction-static must be in (0, 1), got " + memFractionStatic);
    }
    if (pageSize < 1) {
      throw new IllegalArgumentException("page size must be at least 1, got " + pageSize);
    }
  }

  /** The engine's defaults: derived limits, radix cache on, pages of 64 tokens, overlap on. */
  public static ServeOptions defaults() {
    return new ServeOptions(null, null, true, 64, true);
  }

  /**
   * The engine's default {@code --mem-fraction-static} (SGLang's rule, the engine's {@code
   * MemoryPlan.defaultMemFractionStatic}): all memory but 512 MiB, 1.5 MiB per prefill-chunk token
   * (at least 2048), 2 MiB per graph batch and 128 MiB, rounded to three places.
   */
  public static double defaultMemFractionStatic(double totalBytes, int chunk, int graphMaxBs) {
    double gpuMib = totalBytes / (1 << 20);
    double reserved = 512 + Math.max(chunk, 2048) * 1.5 + graphMaxBs * 2 + 1024 / 8.0;
    return Math.round((gpuMib - reserved) / gpuMib * 1000) / 1000.0;
  }
}
