package dev.ringmaster.backend.cpu.model;

import dev.ringmaster.backend.cpu.CpuMatmul;
import dev.ringmaster.backend.cpu.CpuMatrix;

/**
 * An {@code nn.Linear}: weight {@code [out, in]} and an optional bias.
 *
 * @param weight the weight matrix (rows = out features)
 * @param bias the bias, or null
 */
public record Linear(CpuMatrix weight, float[] bias) {
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
    CpuMatmul.matmul(out, x, n, weight);
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
