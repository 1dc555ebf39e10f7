package dev.ringmaster.model.ops;

/**
 * The operations an architecture's forward pass is written against, for one rank and one step: the
 * backend has set the step's token ids, positions and caches before the architecture runs, and
 * every call works on all of the step's tokens. Tensor parallelism lives inside the ops: a rank's
 * weights are its shard, {@link #addRmsNorm} allreduces a partial sum first, the embedding is
 * vocab-parallel and the LM head gathers the vocabulary. A backend is free to fuse: for example to
 * leave a MoE layer's final sum to the next {@link #addRmsNorm}, as long as the results are those
 * of the calls in order.
 *
 * @param <T> the backend's weight handle (a matrix, a vector, or a group the backend laid out)
 */
public interface ModelOps<T> {
  /** {@link Act#HIDDEN} = rows of {@code table} for the step's token ids. */
  void embedding(T table);

  /**
   * {@code out = rmsnorm(x) * weight} over each group of {@code weight}'s length in {@code x} (a
   * whole row, or each head of a row); {@code out} may be {@code x}.
   */
  void rmsNorm(Act out, Act x, T weight, double eps);

  /**
   * {@link Act#HIDDEN} {@code += x} (summed over the ranks first when {@code partialSum}), then
   * {@link Act#NORMED} {@code = rmsnorm(HIDDEN) * weight}.
   */
  void addRmsNorm(Act x, boolean partialSum, T weight, double eps);

  /** {@code y = x . w^T (+ bias)}. */
  void linear(Act y, Act x, T w);

  /** {@code y1 = x . w1^T} and {@code y2 = x . w2^T}: two projections of the same input. */
  void linear2(Act y1, T w1, Act y2, T w2, Act x);

  /**
   * Multi-head latent attention of layer {@code layer}: reads {@link Act#Q} and {@link Act#KVA},
   * normalises the latent, rotates the rotary parts, appends the step's rows to the cache and
   * writes the absorbed attention's context to {@link Act#ATTN}.
   */
  void mlaAttention(AttentionWeights.Mla<T> w, int layer);

  /**
   * Multi-head latent attention with DeepSeek Sparse Attention, layer {@code layer}: as {@link
   * #mlaAttention}, except that each query attends only to the positions its lightning indexer
   * selects. The indexer reads {@link Act#QA} (the normalised query LoRA) and {@link Act#NORMED}
   * (the attention input), caches its key beside the latent, scores every position up to the
   * query's own and keeps the best {@code index_topk} (all of them when there are no more). With
   * {@code indexer} null the layer reuses the selection of the last layer of this step that ran its
   * indexer.
   */
  void mlaSparseAttention(AttentionWeights.Mla<T> w, IndexerWeights<T> indexer, int layer);

  /**
   * Grouped-query attention of layer {@code layer}: reads {@link Act#Q}, {@link Act#K} and {@link
   * Act#V}, normalises queries and keys per head (where the weights have norms, with the model's
   * RMSNorm eps), rotates them, appends keys and values to the cache and writes the context to
   * {@link Act#ATTN}.
   */
  void gqaAttention(AttentionWeights.Gqa<T> w, int layer);

  /** A SwiGLU MLP: {@code out = down(silu(gate x) * up x)}. */
  void denseMlp(Act out, Act x, FeedForwardWeights.Dense<T> w);

  /**
   * A mixture of experts: routes {@code x}, runs this rank's experts and the shared experts, and
   * writes their weighted sum to {@code out}.
   *
   * @return whether {@code out} is complete on every rank (expert parallelism with all-to-all
   *     dispatch) rather than this rank's partial sum
   */
  boolean moe(Act out, Act x, FeedForwardWeights.Moe<T> w, int layer);

  /** Logits of the step's requested rows of {@link Act#NORMED}, through {@code head}. */
  void lmHead(T head);

  /**
   * Keeps a copy of {@link Act#HIDDEN}, the residual stream (complete on every rank) as it enters
   * the next layer, as capture slot {@code slot} of the step; the backend returns the slots
   * concatenated per token (an EAGLE-3 head reads them). A backend that does not capture says so.
   */
  default void captureHidden(int slot) {
    throw new UnsupportedOperationException(
        getClass().getSimpleName() + " does not capture hidden states of its layers");
  }
}
