package dev.ringmaster.sim.model;

/** How a model attends: multi-head latent attention or grouped-query attention. */
public enum AttentionKind {
  /** Multi-head latent attention (DeepSeek-V2/V3, GLM-5): a compressed latent is cached. */
  MLA,
  /** Grouped-query attention (Llama, Qwen3-MoE): keys and values of the KV heads are cached. */
  GQA
}
