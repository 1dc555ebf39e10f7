package dev.ringmaster.model.ops;

/**
 * The named activation buffers of one step, each {@code [tokens, width]} row-major f32. A backend
 * holds one buffer per name (fixed device buffers on a GPU, so captured graphs can replay them);
 * the width of each follows from the model's shape and this rank's share of the heads.
 */
public enum Act {
  /** The residual stream, {@code [tokens, hidden]}. */
  HIDDEN,
  /** The normalised input of the next block, {@code [tokens, hidden]}. */
  NORMED,
  /** Attention output after its output projection, {@code [tokens, hidden]}. */
  ATTN_OUT,
  /** Feed-forward output, {@code [tokens, hidden]}. */
  MLP_OUT,
  /** MLA's query down-projection (q LoRA), {@code [tokens, q_lora_rank]}. */
  QA,
  /** Queries, {@code [tokens, heads * qk_head_dim]}. */
  Q,
  /** MLA's KV latent and shared rotary key, {@code [tokens, kv_lora_rank + rope_dim]}. */
  KVA,
  /** GQA keys, {@code [tokens, kv_heads * head_dim]}. */
  K,
  /** GQA values, {@code [tokens, kv_heads * head_dim]}. */
  V,
  /** Attention context before the output projection, {@code [tokens, heads * v_head_dim]}. */
  ATTN
}
