package dev.ringmaster.cuda.model;

/**
 * The GPU backend's weight handle: what {@link GpuWeightSource} uploaded for each tensor the
 * architecture asked for. Matrices are bf16, FP8 block-scaled or NVFP4 ({@link DeviceMatrix}),
 * vectors f32.
 */
sealed interface GpuTensor {
  /** The matrix of a {@link Mat} handle. */
  static DeviceMatrix mat(GpuTensor t) {
    return ((Mat) t).matrix();
  }

  /** The device pointer of a {@link Vec} handle, 0 for none. */
  static long vec(GpuTensor t) {
    return t == null ? 0 : ((Vec) t).ptr();
  }

  /** An f32 vector of {@code n} values. */
  record Vec(long ptr, int n) implements GpuTensor {}

  /** A bf16 matrix, with its f32 bias or none. */
  record Mat(DeviceMatrix matrix) implements GpuTensor {}

  /**
   * The gate and up projections of one SwiGLU MLP in one {@code [2 * inter, hidden]} matrix, gate
   * rows first (with both biases, or none), as the fused gate|up kernels read them.
   */
  record GateUp(DeviceMatrix matrix, int inter) implements GpuTensor {}

  /**
   * A rank's routed experts stacked as the MoE kernels read them: {@code w13 [E, 2 * inter,
   * hidden]} (gate rows then up rows) and {@code w2 [E, hidden, inter]}; bf16, or FP8 / NVFP4 codes
   * with their scales {@code s13} (parts of {@code inter} rows) and {@code s2} (parts of {@code
   * hidden} rows), which are 0 for bf16; NVFP4 also with the f32 global scales of those parts,
   * {@code g13 [2E]} and {@code g2 [E]} (0 otherwise).
   */
  record Experts(long w13, long w2, long s13, long s2, long g13, long g2) implements GpuTensor {
    /** bf16 or FP8 experts. */
    Experts(long w13, long w2, long s13, long s2) {
      this(w13, w2, s13, s2, 0, 0);
    }
  }
}
