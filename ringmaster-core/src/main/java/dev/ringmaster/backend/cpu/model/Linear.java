package dev.ringmaster.backend.cpu.model;

import dev.ringmaster.backend.cpu.CpuKernelContext;
import dev.ringmaster.backend.cpu.CpuMatmul;
import dev.ringmaster.backend.cpu.CpuMatrix;
import java.util.List;

/**
 * An {@code nn.Linear}: weight {@code [out, in]} and an optional bias.
 *
 * @param weight the weight matrix (rows = out features)
 * @param bias the bias, or null
 * @param kernels the vector width and threads its products run with (the model's)
 */
public record Linear(CpuMatrix weight, float[] bias, CpuKernelContext kernels) {
  /** Output features. */
  public int out() {
    return weight.rows();
  }

  /** Input features. */
  public int in() {
    return weight.cols();
  }

  /** {@code out[n, out] = x[n, in] · W^T + b}. */
  public void apply(float[] out, float[] x, int n) {
    CpuMatmul.matmul(kernels, out, x, n, weight);
    addBias(out, n);
  }

  /**
   * {@link #apply} of two linears to the same {@code x} as one parallel region (gate and up, or the
   * query and KV down-projections): one thread hand-off instead of two, and enough rows to be worth
   * both cores at batch 1, on {@code a}'s kernels. The results are those of two {@code apply}
   * calls.
   */
  public static void applyBoth(Linear a, float[] outA, Linear b, float[] outB, float[] x, int n) {
    CpuMatmul.matmulMany(
        a.kernels,
        List.of(CpuMatmul.Job.of(a.weight, x, n, outA), CpuMatmul.Job.of(b.weight, x, n, outB)));
    a.addBias(outA, n);
    b.addBias(outB, n);
  }

  /**
   * {@code out[t, out] = x[xRows[t], in] · W^T + b} on the calling thread, for the tasks of a
   * region that is already parallel; the results are those of {@link #apply} on those rows.
   */
  void applyRowsHere(float[] out, float[] x, int[] xRows) {
    CpuMatmul.matmulHere(kernels, List.of(new CpuMatmul.Job(weight, x, xRows, out)));
    addBias(out, xRows.length);
  }

  /** {@link #applyRowsHere} of two linears to the same rows of {@code x} (gate and up). */
  static void applyBothRowsHere(
      Linear a, float[] outA, Linear b, float[] outB, float[] x, int[] xRows) {
    CpuMatmul.matmulHere(
        a.kernels,
        List.of(
            new CpuMatmul.Job(a.weight, x, xRows, outA),
            new CpuMatmul.Job(b.weight, x, xRows, outB)));
    a.addBias(outA, xRows.length);
    b.addBias(outB, xRows.length);
  }

  private void addBias(float[] out, int n) {
    if (bias != null) {
      int o = weight.rows();
      for (int t = 0; t < n; t++) {
        for (int r = 0; r < o; r++) {
          out[t * o + r] += bias[r];
        }
      }
    }
  }
}
