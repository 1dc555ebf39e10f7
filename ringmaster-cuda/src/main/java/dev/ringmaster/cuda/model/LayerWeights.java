package dev.ringmaster.cuda.model;

/**
 * One decoder layer's weights on the device: norms (f32 pointers), attention and feed-forward.
 *
 * @param inputNorm input_layernorm weight
 * @param attention the MLA block's weights
 * @param postAttentionNorm post_attention_layernorm weight
 * @param dense the dense MLP (null in an MoE layer)
 * @param moe the mixture of experts (null in a dense layer)
 */
record LayerWeights(
    long inputNorm,
    MlaWeights attention,
    long postAttentionNorm,
    DenseWeights dense,
    MoeWeights moe) {

  /**
   * MLA weights; either {@code qProj} or ({@code qA}, {@code qANorm}, {@code qB}) is set. {@code
   * kvB} is kv_b_proj {@code [heads*(nope+v), kvLora]} as the attention kernels read it (rows
   * {@code h*(nope+v) .. +nope} are W_UK of head h, the next {@code v} rows W_UV).
   */
  record MlaWeights(
      DeviceMatrix qProj,
      DeviceMatrix qA,
      long qANorm,
      DeviceMatrix qB,
      DeviceMatrix kvA,
      long kvANorm,
      DeviceMatrix kvB,
      DeviceMatrix oProj) {}

  /** A SwiGLU MLP: gate rows then up rows in one {@code [2*inter, hidden]} matrix, and down. */
  record DenseWeights(DeviceMatrix gateUp, DeviceMatrix down, int inter) {}

  /**
   * Routed experts stacked as the MoE kernels expect ({@code w13 [E, 2*inter, hidden]}, gate rows
   * then up rows; {@code w2 [E, hidden, inter]}), the router and the shared experts.
   *
   * @param gate router weight {@code [E, hidden]}
   * @param scoreBias e_score_correction_bias (f32) or 0
   * @param w13 stacked gate/up projections
   * @param w2 stacked down projections
   * @param shared shared experts as one MLP, or null
   */
  record MoeWeights(DeviceMatrix gate, long scoreBias, long w13, long w2, DenseWeights shared) {}
}
