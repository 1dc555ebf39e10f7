package dev.ringmaster.backend.cpu.model;

/**
 * The CPU backend's weight handle: what {@link CpuWeightSource} made for each tensor the
 * architecture asked for. Matrices stay memory-mapped in their disk format (column slices are
 * copied); vectors and MLA's latent projection are widened to f32.
 */
sealed interface CpuTensor {
  /** The linear layer of a {@link Matrix} handle. */
  static Linear linear(CpuTensor t) {
    return ((Matrix) t).linear();
  }

  /** The values of a {@link Vector} handle. */
  static float[] vector(CpuTensor t) {
    return ((Vector) t).values();
  }

  /** An f32 vector (norm weights, score biases). */
  record Vector(float[] values) implements CpuTensor {}

  /** A linear layer (also the embedding and the router: no bias). */
  record Matrix(Linear linear) implements CpuTensor {}

  /** MLA's kv_b_proj as f32, {@code [rows, cols]}. */
  record Latent(float[] values, int rows, int cols) implements CpuTensor {}

  /** The gate and up projections of one SwiGLU MLP. */
  record GateUp(Linear gate, Linear up) implements CpuTensor {}

  /** A rank's routed experts: {@code experts[k]} is expert {@code ids[k]}. */
  record Experts(int[] ids, DenseMlp[] experts) implements CpuTensor {}
}
