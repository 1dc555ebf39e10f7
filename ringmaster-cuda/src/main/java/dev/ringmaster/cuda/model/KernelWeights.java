package dev.ringmaster.cuda.model;

/**
 * A layer's feed-forward weights as the GPU's MLP and MoE kernels take them (built per step from
 * the architecture's {@link GpuTensor} handles).
 */
final class KernelWeights {
  private KernelWeights() {}

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
   * @param s13 FP8 / NVFP4 scales of {@code w13} (parts of {@code inter} rows), or 0 for bf16
   * @param s2 FP8 / NVFP4 scales of {@code w2} (parts of {@code hidden} rows), or 0 for bf16
   * @param g13 NVFP4 global scales of {@code w13}'s parts ({@code [2E]}), or 0
   * @param g2 NVFP4 global scales of {@code w2}'s parts ({@code [E]}), or 0
   * @param shared shared experts as one MLP, or null
   */
  record MoeWeights(
      DeviceMatrix gate,
      long scoreBias,
      long w13,
      long w2,
      long s13,
      long s2,
      long g13,
      long g2,
      DenseWeights shared) {
    /** Whether the routed experts are FP8 block-scaled. */
    boolean fp8() {
      return s13 != 0 && g13 == 0;
    }

    /** Whether the routed experts are NVFP4. */
    boolean nvfp4() {
      return g13 != 0;
    }

    /** Whether the routed experts are quantized (FP8 or NVFP4). */
    boolean quantized() {
      return s13 != 0;
    }
  }
}
