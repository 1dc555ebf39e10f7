package dev.ringmaster.cuda.model;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Where a GPU's memory goes: weights, activations (fixed buffers for the largest prefill chunk and
 * decode batch), CUDA graphs (measured per captured size) and the KV cache (what is left within
 * {@code --mem-fraction-static}, as SGLang sizes it).
 *
 * @param gpu device description
 * @param totalBytes device memory
 * @param memFractionStatic share of {@code totalBytes} for weights plus KV cache
 * @param weightBytes bytes of weights on the device
 * @param activationBytes bytes of activation buffers and scratch (cuBLAS workspace included)
 * @param graphBytes device memory the captured graphs took, all sizes together
 * @param graphBytesPerSize graph memory per captured batch size, in capture order
 * @param kvBytes bytes of the KV cache pool (indexer keys included)
 * @param indexerBytes of {@code kvBytes}, the indexer keys of DeepSeek Sparse Attention (0 for
 *     other models)
 * @param indexerDtype how they are stored: {@code bf16}, or {@code fp8_e4m3} (codes and one f32
 *     scale per key); {@code none} for other models
 * @param kvTokens tokens the pool holds (whole blocks, the padding block excluded)
 * @param blockSize tokens per block
 * @param freeAfterBytes device memory still free once everything is allocated
 */
public record MemoryPlan(
    String gpu,
    long totalBytes,
    double memFractionStatic,
    long weightBytes,
    long activationBytes,
    long graphBytes,
    Map<Integer, Long> graphBytesPerSize,
    long kvBytes,
    long indexerBytes,
    String indexerDtype,
    long kvTokens,
    int blockSize,
    long freeAfterBytes) {

  private static final double GB = 1e9;

  /**
   * Bytes one token takes in a single GPU's paged KV cache: a bf16 row per layer (MLA: the latent
   * and rotary key; GQA: keys and values of every KV head), plus the indexer keys of DeepSeek
   * Sparse Attention (bf16, or FP8 codes and an f32 scale) on the layers that run an indexer.
   */
  public static long kvBytesPerToken(dev.ringmaster.model.config.ModelConfig cfg) {
    if (cfg.architecture().usesMla()) {
      return BlockPool.bytesPerToken(cfg);
    }
    return BlockPool.bytes(
        cfg.numLayers(), 1, 1, GpuGqaAttention.cacheRowWidth(cfg, cfg.numKvHeads()));
  }

  /**
   * SGLang's default: {@code (gpuMem - reserved) / gpuMem} with, in MiB, {@code reserved = 512 +
   * max(chunkedPrefill, 2048) * 1.5 + cudaGraphMaxBs * 2 + tp / 8 * 1024} (metadata, prefill
   * activations, graphs, parallel overheads), rounded to three digits.
   */
  public static double defaultMemFractionStatic(
      long totalBytes, int chunkedPrefill, int graphMaxBs) {
    double gpuMib = totalBytes / (double) (1 << 20);
    double reserved = 512 + Math.max(chunkedPrefill, 2048) * 1.5 + graphMaxBs * 2 + 1024 / 8.0;
    return Math.round((gpuMib - reserved) / gpuMib * 1000) / 1000.0;
  }

  /** Largest graph batch by GPU memory (SGLang's classes: small cards capture fewer sizes). */
  public static int defaultGraphMaxBs(long totalBytes) {
    double gib = totalBytes / (double) (1L << 30);
    if (gib < 20) {
      return 8;
    }
    if (gib < 40) {
      return 32;
    }
    if (gib < 90) {
      return 128;
    }
    return 256;
  }

  /** The captured sizes up to {@code maxBs}: 1, 2, 4, 8, then steps of 8, 16, 32 (and maxBs). */
  public static List<Integer> graphLadder(int maxBs) {
    List<Integer> sizes = new ArrayList<>();
    int b = 1;
    while (b <= maxBs) {
      sizes.add(b);
      b = b < 8 ? b * 2 : b < 32 ? b + 8 : b < 64 ? b + 16 : b + 32;
    }
    if (sizes.get(sizes.size() - 1) != maxBs) {
      sizes.add(maxBs);
    }
    return sizes;
  }

  /**
   * Bytes for the KV cache: the static share minus the weights, never more than is free now less
   * the graph reserve and a safety margin.
   */
  static long kvBudget(
      long totalBytes, double fraction, long weightBytes, long freeNow, long graphReserve) {
    long byFraction = (long) (fraction * totalBytes) - weightBytes;
    long byFree = freeNow - graphReserve - (256L << 20);
    return Math.min(byFraction, byFree);
  }

  /** Memory held back for {@code graphs} captured decode graphs (64 MiB each). */
  static long graphReserve(long graphs) {
    return 64L * (1 << 20) * graphs;
  }

  /**
   * KV cache blocks of {@code bytesPerBlock} that fit {@link #kvBudget}, at most enough for {@code
   * maxTotalTokens} (null: no cap) plus the padding block; refuses fewer than two with what to do.
   */
  static long kvBlocks(
      long totalBytes,
      double fraction,
      long weightBytes,
      long freeNow,
      long graphReserve,
      long bytesPerBlock,
      int blockSize,
      Integer maxTotalTokens) {
    long blocks =
        kvBudget(totalBytes, fraction, weightBytes, freeNow, graphReserve) / bytesPerBlock;
    if (maxTotalTokens != null) {
      blocks = Math.min(blocks, (maxTotalTokens + blockSize - 1) / blockSize + 1L);
    }
    if (blocks < 2) {
      throw new IllegalStateException(
          String.format(
              "no GPU memory left for the KV cache: %.2f GB total, weights %.2f GB, %.2f GB free;"
                  + " raise --mem-fraction-static or lower --chunked-prefill-size",
              totalBytes / 1e9, weightBytes / 1e9, freeNow / 1e9));
    }
    return blocks;
  }

  /** The breakdown as printed at start-up. */
  public String describe() {
    StringBuilder sb = new StringBuilder();
    sb.append(
        String.format(
            Locale.ROOT,
            "memory plan on %s (%.1f GB, mem-fraction-static %.3f):%n",
            gpu,
            totalBytes / GB,
            memFractionStatic));
    sb.append(String.format(Locale.ROOT, "  weights      %8.2f GB%n", weightBytes / GB));
    sb.append(String.format(Locale.ROOT, "  activations  %8.2f GB%n", activationBytes / GB));
    sb.append(
        String.format(
            Locale.ROOT,
            "  cuda graphs  %8.2f GB (%d sizes)%n",
            graphBytes / GB,
            graphBytesPerSize.size()));
    sb.append(
        String.format(
            Locale.ROOT,
            "  kv cache     %8.2f GB = %,d tokens (blocks of %d)%n",
            kvBytes / GB,
            kvTokens,
            blockSize));
    if (indexerBytes > 0) {
      sb.append(
          String.format(
              Locale.ROOT,
              "    of which indexer keys %8.2f GB (%s)%n",
              indexerBytes / GB,
              indexerDtype));
    }
    sb.append(String.format(Locale.ROOT, "  still free   %8.2f GB%n", freeAfterBytes / GB));
    return sb.toString();
  }

  /** The breakdown as JSON-ready values (snake_case keys, GB as decimals). */
  public Map<String, Object> toJson() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("gpu", gpu);
    m.put("total_gb", round(totalBytes / GB));
    m.put("mem_fraction_static", memFractionStatic);
    m.put("weights_gb", round(weightBytes / GB));
    m.put("activations_gb", round(activationBytes / GB));
    m.put("cuda_graphs_gb", round(graphBytes / GB));
    Map<String, Object> per = new LinkedHashMap<>();
    graphBytesPerSize.forEach((bs, bytes) -> per.put(Integer.toString(bs), round(bytes / 1e6)));
    m.put("cuda_graph_mb_per_bs", per);
    m.put("kv_cache_gb", round(kvBytes / GB));
    m.put("kv_cache_indexer_gb", round(indexerBytes / GB));
    m.put("kv_cache_indexer_dtype", indexerDtype);
    m.put("kv_cache_tokens", kvTokens);
    m.put("kv_block_size", blockSize);
    m.put("free_after_gb", round(freeAfterBytes / GB));
    return m;
  }

  private static double round(double v) {
    return Math.round(v * 1000) / 1000.0;
  }

  /**
   * The decode batch sizes to capture as CUDA graphs: none with {@code --disable-cuda-graph}, the
   * given sizes up to the largest, or the ladder up to {@code --cuda-graph-max-bs} (by default
   * derived from the GPU's memory).
   */
  static List<Integer> graphSizes(CudaModelOptions options, long totalBytes) {
    if (options.disableCudaGraph()) {
      return List.of();
    }
    int maxBs =
        options.cudaGraphMaxBs() != null ? options.cudaGraphMaxBs() : defaultGraphMaxBs(totalBytes);
    if (options.cudaGraphBs() != null) {
      return options.cudaGraphBs().stream().filter(b -> b <= maxBs).toList();
    }
    return graphLadder(maxBs);
  }
}
