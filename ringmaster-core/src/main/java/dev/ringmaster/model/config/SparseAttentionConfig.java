package dev.ringmaster.model.config;

import java.util.List;

/**
 * DeepSeek Sparse Attention (DSA) parameters: the lightning indexer of each layer scores every
 * earlier position and the attention reads only the {@code topK} best.
 *
 * @param indexHeads indexer query heads ({@code index_n_heads})
 * @param indexHeadDim indexer query and key size ({@code index_head_dim}); the first {@code
 *     qk_rope_head_dim} dims are rotated
 * @param topK positions each query attends to ({@code index_topk})
 * @param ropeInterleaved whether the indexer rotates interleaved pairs (GLM-5) rather than halves
 *     (DeepSeek-V3.2)
 * @param fullLayers for each layer, whether it runs its own indexer ({@code indexer_types} "full");
 *     a "shared" layer reuses the selection of the last full layer before it
 * @param keyCache how the indexer key cache stores its keys: a run's choice ({@link
 *     IndexerCacheDtype#AUTO} as parsed), set with {@link #withKeyCache}
 */
public record SparseAttentionConfig(
    int indexHeads,
    int indexHeadDim,
    int topK,
    boolean ropeInterleaved,
    List<Boolean> fullLayers,
    IndexerCacheDtype keyCache) {

  /**
   * These parameters with the indexer keys stored as {@code dtype}.
   *
   * @throws IllegalArgumentException for FP8 keys longer than {@link
   *     IndexerCacheDtype#FP8_MAX_HEAD_DIM} (one scale per key)
   */
  public SparseAttentionConfig withKeyCache(IndexerCacheDtype dtype) {
    if (dtype == IndexerCacheDtype.FP8_E4M3 && indexHeadDim > IndexerCacheDtype.FP8_MAX_HEAD_DIM) {
      throw new IllegalArgumentException(
          "--indexer-cache-dtype fp8_e4m3 keeps one scale per key, so index_head_dim must be at"
              + " most "
              + IndexerCacheDtype.FP8_MAX_HEAD_DIM
              + ", got "
              + indexHeadDim
              + "; use --indexer-cache-dtype auto");
    }
    return new SparseAttentionConfig(
        indexHeads, indexHeadDim, topK, ropeInterleaved, fullLayers, dtype);
  }

  /** Whether the indexer keys are cached as FP8 codes with one f32 scale each. */
  public boolean fp8Keys() {
    return keyCache == IndexerCacheDtype.FP8_E4M3;
  }

  /**
   * Bytes one token's indexer key takes on one indexed layer: {@code index_head_dim} codes plus an
   * f32 scale with FP8 keys, else {@code index_head_dim} values of {@code autoBytesPerValue} (the
   * backend's own precision: 4 on the CPU, 2 on the GPU).
   */
  public long keyBytesPerLayer(int autoBytesPerValue) {
    return fp8Keys() ? indexHeadDim + 4L : (long) autoBytesPerValue * indexHeadDim;
  }

  /** {@link #keyBytesPerLayer} over the layers that run an indexer. */
  public long keyBytesPerToken(int autoBytesPerValue) {
    return indexedLayers() * keyBytesPerLayer(autoBytesPerValue);
  }

  /** Whether layer {@code layer} runs its own indexer (and caches indexer keys). */
  public boolean hasIndexer(int layer) {
    return fullLayers.get(layer);
  }

  /** Layers that run their own indexer. */
  public int indexedLayers() {
    return (int) fullLayers.stream().filter(b -> b).count();
  }
}
