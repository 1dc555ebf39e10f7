package dev.ringmaster.model.ops;

/**
 * Where a backend's weights come from: the architecture asks for each tensor of the checkpoint by
 * name, shape and this rank's slice, and the backend returns its own handle (mapped CPU memory, a
 * device upload, or only a record of the tensor). Every method checks the tensor's shape against
 * the checkpoint and fails naming the tensor.
 *
 * @param <T> the backend's weight handle
 */
public interface WeightSource<T> {
  /**
   * A contiguous part {@code [start, start + count)} of one dimension.
   *
   * @param start first index
   * @param count length
   */
  record Slice(int start, int count) {
    /** The whole dimension of size {@code n}. */
    public static Slice all(int n) {
      return new Slice(0, n);
    }
  }

  /** Whether the checkpoint holds a tensor named {@code name}. */
  boolean contains(String name);

  /** The vector {@code name} of {@code n} elements (norm weights, score biases), as f32. */
  T vector(String name, int n);

  /**
   * The linear layer {@code prefix.weight [rows, cols]}, output features {@code rows} sliced
   * (column-parallel), with {@code prefix.bias} sliced alike when {@code bias}.
   */
  T linearRows(String prefix, int rows, int cols, Slice rowSlice, boolean bias);

  /**
   * The linear layer {@code prefix.weight [rows, cols]}, input features {@code cols} sliced
   * (row-parallel: the ranks' outputs are partial sums), with the whole {@code prefix.bias} when
   * {@code bias} (one rank only, so that the sum adds it once).
   */
  T linearCols(String prefix, int rows, int cols, Slice colSlice, boolean bias);

  /**
   * MLA's {@code kv_b_proj.weight [rows, cols]} (rows sliced by head), as the attention reads it
   * rather than as a linear layer.
   */
  T latentProjection(String name, int rows, int cols, Slice rowSlice);

  /**
   * The gate and up projections of one SwiGLU MLP ({@code gatePrefix.weight} and {@code
   * upPrefix.weight}, each {@code [inter, hidden]}, intermediate rows sliced, with their biases
   * where the checkpoint has them), as one handle the backend lays out for its MLP kernels.
   */
  T gateUp(String gatePrefix, String upPrefix, int inter, int hidden, Slice interSlice);

  /**
   * This rank's routed experts of one MoE layer of {@code numExperts}: experts {@code ids} (in that
   * order), each a bias-free SwiGLU MLP of {@code inter} intermediate features ({@code interSlice}
   * of them here).
   */
  T experts(
      ExpertTensors tensors, int numExperts, int[] ids, int hidden, int inter, Slice interSlice);
}
