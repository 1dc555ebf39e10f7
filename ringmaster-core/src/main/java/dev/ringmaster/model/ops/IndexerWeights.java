package dev.ringmaster.model.ops;

/**
 * One layer's lightning indexer (DeepSeek Sparse Attention), replicated on every rank.
 *
 * @param wqB {@code indexer.wq_b [index_heads * index_head_dim, q_lora_rank]}: indexer queries from
 *     the normalised query LoRA ({@link Act#QA})
 * @param wk {@code indexer.wk [index_head_dim, hidden]}: the indexer key from the attention input
 * @param kNormWeight {@code indexer.k_norm.weight}, a LayerNorm (eps 1e-6) of the key
 * @param kNormBias {@code indexer.k_norm.bias}
 * @param weightsProj {@code indexer.weights_proj [index_heads, hidden]}: per-head weights of the
 *     score
 * @param <T> the backend's weight handle
 */
public record IndexerWeights<T>(T wqB, T wk, T kNormWeight, T kNormBias, T weightsProj) {}
