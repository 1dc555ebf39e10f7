package dev.ringmaster.engine.batch;

import java.util.List;

/**
 * How {@code serve} derives its scheduling limits when no flag sets them, from the model's memory
 * and its captured decode graphs (SGLang's rules where it has them).
 *
 * <ul>
 *   <li>Running requests: at most half the KV pool's tokens; at most SGLang's request-slot count,
 *       {@code pool tokens / context length * 512} clamped to [2048, 4096]; and at most the largest
 *       captured decode graph, so every decode step replays a graph. Without graphs (the CPU) the
 *       last bound is {@link #CPU_MAX_RUNNING_REQUESTS}.
 *   <li>Chunked prefill on the GPU by its memory, as SGLang's table: under 35 GiB 2048, under 60
 *       GiB 4096, under 160 GiB 8192, else 16384. On the CPU {@link #CPU_CHUNKED_PREFILL_SIZE}.
 * </ul>
 */
public final class ServingDefaults {
  /**
   * Running requests at most on the CPU: decode steps there are compute-bound, so a larger batch
   * adds inter-token latency for little throughput ({@code bench serve} on the embedded model, 32
   * concurrent 512-token prompts: 32 running beat 64 and 16; {@code bench one-batch} decodes batch
   * 32 at 413 tok/s against 660 at batch 8, so more rows do not pay).
   */
  public static final int CPU_MAX_RUNNING_REQUESTS = 32;

  /**
   * Prompt tokens per step on the CPU: two 512-token prompts per step prefill faster than one
   * (1,289-1,491 against 682 tok/s in {@code bench one-batch}) and {@code bench serve} with 32
   * concurrent 512-token prompts ran best with it; larger chunks stall running decodes longer.
   */
  public static final int CPU_CHUNKED_PREFILL_SIZE = 1024;

  private ServingDefaults() {}

  /**
   * The default {@code --max-running-requests}.
   *
   * @param poolTokens token positions the KV pool holds
   * @param contextLength the model's context length
   * @param graphBatchSizes the captured decode batch sizes (empty without graphs)
   */
  public static int maxRunningRequests(
      long poolTokens, int contextLength, List<Integer> graphBatchSizes) {
    long slots = Math.clamp(poolTokens * 512 / Math.max(1, contextLength), 2048, 4096);
    long bound = Math.min(Math.max(1, poolTokens / 2), slots);
    int decodeCap =
        graphBatchSizes.isEmpty()
            ? CPU_MAX_RUNNING_REQUESTS
            : graphBatchSizes.stream().mapToInt(Integer::intValue).max().getAsInt();
    return (int) Math.max(1, Math.min(bound, decodeCap));
  }

  /** The default {@code --chunked-prefill-size} on a GPU with {@code totalBytes} of memory. */
  public static int gpuChunkedPrefillSize(long totalBytes) {
    double gib = totalBytes / (double) (1L << 30);
    if (gib < 35) {
      return 2048;
    }
    if (gib < 60) {
      return 4096;
    }
    if (gib < 160) {
      return 8192;
    }
    return 16384;
  }

  /** A one-line account of the derivation, for the start-up log and server info. */
  public static String describe(
      int maxRunning,
      boolean runningDerived,
      int chunk,
      boolean chunkDerived,
      long poolTokens,
      List<Integer> graphBatchSizes) {
    String graphs =
        graphBatchSizes.isEmpty()
            ? "no decode graphs"
            : "decode graphs up to batch " + graphBatchSizes.getLast();
    return "max running requests "
        + maxRunning
        + (runningDerived ? " (from " + poolTokens + " KV tokens and " + graphs + ")" : " (flag)")
        + ", chunked prefill "
        + chunk
        + (chunkDerived ? " (default)" : " (flag)");
  }
}
