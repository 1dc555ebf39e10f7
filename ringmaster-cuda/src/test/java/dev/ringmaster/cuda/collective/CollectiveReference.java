package dev.ringmaster.cuda.collective;

import java.util.Arrays;

/** CPU references for the device collectives: sums in rank order, as the peer kernels compute. */
final class CollectiveReference {
  private CollectiveReference() {}

  /** {@code ((x0 + x1) + x2) + ...} elementwise. */
  static float[] rankOrderSum(float[][] x) {
    float[] s = x[0].clone();
    for (int r = 1; r < x.length; r++) {
      for (int i = 0; i < s.length; i++) {
        s[i] += x[r][i];
      }
    }
    return s;
  }

  /**
   * {@code residual += sum; out = weight * residual / sqrt(mean(residual^2) + eps)} per row;
   * returns out and updates {@code residual}.
   */
  static float[] addRmsNorm(
      float[] sum, float[] residual, float[] weight, int rows, int hidden, float eps) {
    float[] out = new float[rows * hidden];
    for (int row = 0; row < rows; row++) {
      double ss = 0;
      for (int k = 0; k < hidden; k++) {
        int i = row * hidden + k;
        residual[i] = residual[i] + sum[i];
        ss += (double) residual[i] * residual[i];
      }
      double inv = 1.0 / Math.sqrt(ss / hidden + eps);
      for (int k = 0; k < hidden; k++) {
        int i = row * hidden + k;
        out[i] = (float) (weight[k] * residual[i] * inv);
      }
    }
    return out;
  }

  /**
   * Fails unless {@code got} equals {@code want} bit for bit, naming the first difference.
   * (AssertJ's containsExactly takes quadratic time on arrays of a million elements.)
   */
  static void assertExact(String what, float[] got, float[] want) {
    if (Arrays.equals(got, want)) {
      return;
    }
    if (got.length != want.length) {
      throw new AssertionError(what + ": length " + got.length + ", expected " + want.length);
    }
    int i = Arrays.mismatch(got, want);
    throw new AssertionError(what + ": element " + i + " is " + got[i] + ", expected " + want[i]);
  }
}
