package dev.ringmaster.model.ops;

/**
 * One layer's attention weights, as this rank holds them.
 *
 * @param <T> the backend's weight handle
 */
public sealed interface AttentionWeights<T> {
  /**
   * Multi-head latent attention; either {@code qProj} or ({@code qA}, {@code qANorm}, {@code qB})
   * is set. {@code kvB} is {@code kv_b_proj} as the attention reads it: rows {@code h*(nope+v) ..
   * +nope} are W_UK of head h, the next {@code v} rows W_UV.
   */
  record Mla<T>(T qProj, T qA, T qANorm, T qB, T kvA, T kvANorm, T kvB, T oProj)
      implements AttentionWeights<T> {}

  /**
   * Multi-head latent attention with DeepSeek Sparse Attention: {@code indexer} is null on a layer
   * that reuses the previous indexed layer's selection (GLM-5's "shared" layers).
   */
  record SparseMla<T>(Mla<T> mla, IndexerWeights<T> indexer) implements AttentionWeights<T> {}

  /** Grouped-query attention with optional per-head query and key norms (null when absent). */
  record Gqa<T>(T qProj, T kProj, T vProj, T qNorm, T kNorm, T oProj)
      implements AttentionWeights<T> {}
}
