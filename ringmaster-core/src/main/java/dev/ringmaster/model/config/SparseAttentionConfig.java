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
 */
public record SparseAttentionConfig(
    int indexHeads, int indexHeadDim, int topK, boolean ropeInterleaved, List<Boolean> fullLayers) {

  /** Whether layer {@code layer} runs its own indexer (and caches indexer keys). */
  public boolean hasIndexer(int layer) {
    return fullLayers.get(layer);
  }

  /** Layers that run their own indexer. */
  public int indexedLayers() {
    return (int) fullLayers.stream().filter(b -> b).count();
  }
}
