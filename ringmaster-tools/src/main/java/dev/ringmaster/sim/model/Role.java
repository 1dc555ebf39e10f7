package dev.ringmaster.sim.model;

/** What a weight does; decides its format and which breakdown term its streaming counts toward. */
public enum Role {
  /** Token embedding table (one row read per token). */
  EMBEDDING,
  /** Attention projections (q/kv LoRA, q_b, kv_b, o; or q, k, v, o). */
  ATTENTION_PROJ,
  /** DSA indexer projections. */
  INDEXER_PROJ,
  /** Dense MLP of non-MoE layers. */
  DENSE_MLP,
  /** MoE router gate. */
  ROUTER,
  /** Shared experts (always active). */
  SHARED_EXPERT,
  /** Routed experts (only the selected ones are read). */
  ROUTED_EXPERT,
  /** RMSNorm/LayerNorm weights and biases, router correction bias. */
  NORM,
  /** Output projection to the vocabulary. */
  LM_HEAD
}
