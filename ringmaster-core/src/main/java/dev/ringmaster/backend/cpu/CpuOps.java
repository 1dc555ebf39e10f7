package dev.ringmaster.backend.cpu;

/**
 * Small element-wise and row-wise operations of the CPU backend on row-major f32 activations. The
 * heavy products live in {@link CpuMatmul}; these touch activations only, so scalar code is fine.
 */
public final class CpuOps {
  private CpuOps() {}

  /**
   * RMS-normalises {@code rows} rows of {@code dim} values (row stride {@code stride}, starting at
   * {@code off}) in place and multiplies by {@code weight}, as transformers' RMSNorm in f32.
   */
  public static void rmsNorm(
      float[] x, int off, int rows, int dim, int stride, float[] weight, double eps) {
    int r = 0;
    // Four rows at a time: four independent sums (each row's still in order) instead of one chain
    // of dependent double additions, which bound a 128-token prefill's norms.
    for (; r + 4 <= rows; r += 4) {
      int b0 = off + r * stride;
      int b1 = b0 + stride;
      int b2 = b1 + stride;
      int b3 = b2 + stride;
      double s0 = 0;
      double s1 = 0;
      double s2 = 0;
      double s3 = 0;
      for (int i = 0; i < dim; i++) {
        float v0 = x[b0 + i];
        float v1 = x[b1 + i];
        float v2 = x[b2 + i];
        float v3 = x[b3 + i];
        s0 += v0 * v0;
        s1 += v1 * v1;
        s2 += v2 * v2;
        s3 += v3 * v3;
      }
      scaleRow(x, b0, dim, weight, s0, eps);
      scaleRow(x, b1, dim, weight, s1, eps);
      scaleRow(x, b2, dim, weight, s2, eps);
      scaleRow(x, b3, dim, weight, s3, eps);
    }
    for (; r < rows; r++) {
      int base = off + r * stride;
      double sumSq = 0;
      for (int i = 0; i < dim; i++) {
        float v = x[base + i];
        sumSq += v * v;
      }
      scaleRow(x, base, dim, weight, sumSq, eps);
    }
  }

  private static void scaleRow(
      float[] x, int base, int dim, float[] weight, double sumSq, double eps) {
    float variance = (float) (sumSq / dim);
    float inv = (float) (1.0 / Math.sqrt(variance + (float) eps));
    for (int i = 0; i < dim; i++) {
      x[base + i] = weight[i] * (x[base + i] * inv);
    }
  }

  /** {@code out[i] = silu(gate[i]) * up[i]}. */
  public static void siluMul(float[] out, float[] gate, float[] up, int n) {
    for (int i = 0; i < n; i++) {
      float g = gate[i];
      out[i] = (g / (1f + (float) Math.exp(-g))) * up[i];
    }
  }

  /** {@code y[i] += x[i]} for {@code n} values. */
  public static void addInPlace(float[] y, float[] x, int n) {
    for (int i = 0; i < n; i++) {
      y[i] += x[i];
    }
  }

  /** {@code y[yOff + i] += a * x[xOff + i]}. */
  public static void axpy(float a, float[] x, int xOff, float[] y, int yOff, int n) {
    for (int i = 0; i < n; i++) {
      y[yOff + i] += a * x[xOff + i];
    }
  }

  /** Dot product of {@code n} values. */
  public static float dot(float[] a, int aOff, float[] b, int bOff, int n) {
    float s = 0;
    for (int i = 0; i < n; i++) {
      s += a[aOff + i] * b[bOff + i];
    }
    return s;
  }

  /** Index of the largest of {@code n} values at {@code off} (the lowest index on ties). */
  public static int argmax(float[] x, int off, int n) {
    int best = 0;
    // The best value kept in a local: reloading x[off + best] made every step wait on the last.
    float max = n > 0 ? x[off] : 0f;
    for (int i = 1; i < n; i++) {
      float v = x[off + i];
      if (v > max) {
        max = v;
        best = i;
      }
    }
    return best;
  }

  /** Softmax of {@code n} values at {@code off}, in place: {@link VectorMath#softmax}. */
  public static void softmax(float[] x, int off, int n) {
    VectorMath.softmax(x, off, n);
  }
}
