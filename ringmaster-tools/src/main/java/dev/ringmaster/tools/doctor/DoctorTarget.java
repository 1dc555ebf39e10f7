package dev.ringmaster.tools.doctor;

/**
 * The serving configuration {@code doctor} checks the host against (SGLang's flag names).
 *
 * @param tpSize {@code --tp-size}: GPUs the allreduce and all-to-all checks count
 * @param epSize {@code --ep-size}
 * @param allToAll {@code --moe-a2a-backend all-to-all}
 * @param chunkedPrefillSize {@code --chunked-prefill-size}: the token budget of a step
 * @param contextLength {@code --context-length}: KV per sequence, 0 for the model's own
 * @param cudaGraphMaxBs {@code --cuda-graph-max-bs}: largest captured decode batch
 * @param memFractionStatic {@code --mem-fraction-static}, or 0 for the engine's default
 */
public record DoctorTarget(
    int tpSize,
    int epSize,
    boolean allToAll,
    int chunkedPrefillSize,
    int contextLength,
    int cudaGraphMaxBs,
    double memFractionStatic) {

  /** Checks the values. */
  public DoctorTarget {
    if (tpSize < 1 || epSize < 1 || chunkedPrefillSize < 1 || contextLength < 0) {
      throw new IllegalArgumentException(
          "--tp-size, --ep-size and --chunked-prefill-size must be at least 1, --context-length"
              + " at least 0");
    }
    if (cudaGraphMaxBs < 0 || memFractionStatic < 0 || memFractionStatic > 1) {
      throw new IllegalArgumentException(
          "--cuda-graph-max-bs must be at least 0 and --mem-fraction-static within (0, 1]");
    }
  }

  /** One GPU, the engine's default chunk (8192) and graphs up to 160. */
  public static DoctorTarget defaults() {
    return new DoctorTarget(1, 1, false, 8192, 0, 160, 0);
  }

  /** GPUs the configuration spreads over. */
  public int worldSize() {
    return Math.max(tpSize, epSize);
  }
}
