package dev.ringmaster.cuda.model;

import dev.ringmaster.runtime.KernelTuning;
import java.util.List;

/**
 * How to run a model on a GPU (flag names as in SGLang where the meaning is the same).
 *
 * @param device GPU ordinal
 * @param memFractionStatic share of GPU memory for weights plus KV cache; null derives it from the
 *     GPU's memory as SGLang does ({@link MemoryPlan#defaultMemFractionStatic})
 * @param cudaGraphMaxBs largest decode batch replayed from a CUDA graph; null derives it from the
 *     GPU's memory
 * @param cudaGraphBs the decode batch sizes to capture; null for the default ladder up to {@code
 *     cudaGraphMaxBs}
 * @param disableCudaGraph run decode steps launch by launch
 * @param chunkedPrefillSize most tokens one prefill chunk runs at once (sizes the activations)
 * @param maxTotalTokens cap on the KV cache's tokens; null for as many as memory allows
 * @param blockSize tokens per KV cache block
 * @param gemvMaxTokens up to this many tokens a linear layer uses the GEMV kernel (f32
 *     activations), above it cuBLAS (activations rounded to bf16)
 * @param moeGroupedMinTokens fewest prefill-chunk tokens for the per-expert cuBLAS GEMMs
 * @param tuning the kernel choices ({@code --kernel-option}, {@code --kernel-config}): programmatic
 *     dependent launch, fused launches, attention and expert kernel variants
 * @param profile time one eagerly launched step per decode batch size and prefill chunk size by op
 *     group ({@code bench one-batch --profile}); such steps launch the production kernel sequence
 */
public record CudaModelOptions(
    int device,
    Double memFractionStatic,
    Integer cudaGraphMaxBs,
    List<Integer> cudaGraphBs,
    boolean disableCudaGraph,
    int chunkedPrefillSize,
    Integer maxTotalTokens,
    int blockSize,
    int gemvMaxTokens,
    int moeGroupedMinTokens,
    KernelTuning tuning,
    boolean profile) {
  /** The largest KV block size (tokens) the GPU cache takes. */
  public static final int MAX_BLOCK_SIZE = 1024;

  /** SGLang's default chunked prefill size for large GPUs. */
  public static final int DEFAULT_CHUNKED_PREFILL = 8192;

  /** Validates the values. */
  public CudaModelOptions {
    if (memFractionStatic != null && (memFractionStatic <= 0 || memFractionStatic >= 1)) {
      throw new IllegalArgumentException(
          "--mem-fraction-static must be in (0, 1), got " + memFractionStatic);
    }
    if (cudaGraphMaxBs != null && cudaGraphMaxBs < 1) {
      throw new IllegalArgumentException("--cuda-graph-max-bs must be at least 1");
    }
    if (cudaGraphBs != null) {
      cudaGraphBs = cudaGraphBs.stream().distinct().sorted().toList();
      if (cudaGraphBs.isEmpty() || cudaGraphBs.get(0) < 1) {
        throw new IllegalArgumentException("--cuda-graph-bs needs sizes of at least 1");
      }
    }
    if (chunkedPrefillSize < 1 || blockSize < 1 || gemvMaxTokens < 0 || moeGroupedMinTokens < 1) {
      throw new IllegalArgumentException(
          "chunked prefill size and block size must be positive, gemv tokens not negative");
    }
    if (blockSize > MAX_BLOCK_SIZE) {
      // The attention kernels index any block size (slot = table[p / bs] * bs + p % bs); a huge
      // block only wastes the unused tail of every sequence's last block.
      throw new IllegalArgumentException(
          "--page-size on the GPU is its KV cache block size and must be in 1.."
              + MAX_BLOCK_SIZE
              + ", got "
              + blockSize);
    }
    if (tuning == null) {
      throw new IllegalArgumentException("kernel tuning must be given (KernelTuning.defaults())");
    }
  }

  /** GPU 0, everything derived, graphs on, the default kernel choices, no profiling. */
  public static CudaModelOptions defaults() {
    return new CudaModelOptions(
        0,
        null,
        null,
        null,
        false,
        DEFAULT_CHUNKED_PREFILL,
        null,
        64,
        4,
        128,
        KernelTuning.defaults(),
        false);
  }

  /** Whether this project's kernels launch as programmatic dependent launches ({@code pdl}). */
  public boolean pdl() {
    return tuning.pdl();
  }

  /** These options with other kernel choices. */
  public CudaModelOptions withTuning(KernelTuning t) {
    return new CudaModelOptions(
        device,
        memFractionStatic,
        cudaGraphMaxBs,
        cudaGraphBs,
        disableCudaGraph,
        chunkedPrefillSize,
        maxTotalTokens,
        blockSize,
        gemvMaxTokens,
        moeGroupedMinTokens,
        t,
        profile);
  }

  /** These options with KV cache blocks of {@code tokens} positions (one prefix-cache page). */
  public CudaModelOptions withBlockSize(int tokens) {
    return new CudaModelOptions(
        device,
        memFractionStatic,
        cudaGraphMaxBs,
        cudaGraphBs,
        disableCudaGraph,
        chunkedPrefillSize,
        maxTotalTokens,
        tokens,
        gemvMaxTokens,
        moeGroupedMinTokens,
        tuning,
        profile);
  }

  /** These options with profiling on or off. */
  public CudaModelOptions withProfile(boolean on) {
    return new CudaModelOptions(
        device,
        memFractionStatic,
        cudaGraphMaxBs,
        cudaGraphBs,
        disableCudaGraph,
        chunkedPrefillSize,
        maxTotalTokens,
        blockSize,
        gemvMaxTokens,
        moeGroupedMinTokens,
        tuning,
        on);
  }

  /** These options with programmatic dependent launch on or off. */
  public CudaModelOptions withPdl(boolean on) {
    return withTuning(tuning.with("pdl", on));
  }

  /** These options with a cap on KV tokens. */
  public CudaModelOptions withMaxTotalTokens(Integer tokens) {
    return new CudaModelOptions(
        device,
        memFractionStatic,
        cudaGraphMaxBs,
        cudaGraphBs,
        disableCudaGraph,
        chunkedPrefillSize,
        tokens,
        blockSize,
        gemvMaxTokens,
        moeGroupedMinTokens,
        tuning,
        profile);
  }

  /** These options with explicit graph sizes, or graphs off when {@code sizes} is empty. */
  public CudaModelOptions withGraphs(List<Integer> sizes) {
    return new CudaModelOptions(
        device,
        memFractionStatic,
        sizes.isEmpty() ? null : sizes.get(sizes.size() - 1),
        sizes.isEmpty() ? null : sizes,
        sizes.isEmpty(),
        chunkedPrefillSize,
        maxTotalTokens,
        blockSize,
        gemvMaxTokens,
        moeGroupedMinTokens,
        tuning,
        profile);
  }

  /** These options with another GEMV/cuBLAS threshold. */
  public CudaModelOptions withGemvMaxTokens(int tokens) {
    return new CudaModelOptions(
        device,
        memFractionStatic,
        cudaGraphMaxBs,
        cudaGraphBs,
        disableCudaGraph,
        chunkedPrefillSize,
        maxTotalTokens,
        blockSize,
        tokens,
        moeGroupedMinTokens,
        tuning,
        profile);
  }

  /** These options with another prefill chunk size. */
  public CudaModelOptions withChunkedPrefillSize(int tokens) {
    return new CudaModelOptions(
        device,
        memFractionStatic,
        cudaGraphMaxBs,
        cudaGraphBs,
        disableCudaGraph,
        tokens,
        maxTotalTokens,
        blockSize,
        gemvMaxTokens,
        moeGroupedMinTokens,
        tuning,
        profile);
  }

  /** These options with another grouped-GEMM threshold for the routed experts. */
  public CudaModelOptions withMoeGroupedMinTokens(int tokens) {
    return new CudaModelOptions(
        device,
        memFractionStatic,
        cudaGraphMaxBs,
        cudaGraphBs,
        disableCudaGraph,
        chunkedPrefillSize,
        maxTotalTokens,
        blockSize,
        gemvMaxTokens,
        tokens,
        tuning,
        profile);
  }
}
