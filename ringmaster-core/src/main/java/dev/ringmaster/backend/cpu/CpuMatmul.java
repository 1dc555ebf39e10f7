package dev.ringmaster.backend.cpu;

/**
 * Products of activations with weight matrices on the CPU: {@code out[n][rows] = x[n][cols] · W^T}.
 * This is the hot loop of CPU inference (weight streaming), so it is vectorised and parallel.
 */
public final class CpuMatmul {
  private CpuMatmul() {}

  /**
   * Computes {@code out[t*outStride + r] = sum_c x[t*cols + c] * W[r][c]} for {@code t < n}.
   *
   * @param out output, at least {@code n * w.rows()} floats
   * @param x input, {@code n * w.cols()} floats, row-major
   * @param n number of token rows
   * @param w the weight matrix
   */
  public static void matmul(float[] out, float[] x, int n, CpuMatrix w) {
    int rows = w.rows();
    int cols = w.cols();
    for (int t = 0; t < n; t++) {
      for (int r = 0; r < rows; r++) {
        float acc = 0;
        for (int c = 0; c < cols; c++) {
          acc += x[t * cols + c] * w.get(r, c);
        }
        out[t * rows + r] = acc;
      }
    }
  }
}
