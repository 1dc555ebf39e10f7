package dev.ringmaster.cuda.testing;

import static org.assertj.core.api.Assertions.assertThat;

/** Checks of device results against references: every element written, relative error bounded. */
public final class Compare {
  private Compare() {}

  /**
   * The raw bit patterns of {@code v}, for bit-for-bit comparisons that AssertJ checks in linear
   * time and that tell NaN payloads and signed zeros apart.
   */
  public static int[] bits(float[] v) {
    int[] b = new int[v.length];
    for (int i = 0; i < v.length; i++) {
      b[i] = Float.floatToRawIntBits(v[i]);
    }
    return b;
  }

  /** Relative error {@code ||got - want|| / ||want||} in f64. */
  public static double relativeError(float[] got, float[] want) {
    double num = 0;
    double den = 0;
    for (int i = 0; i < want.length; i++) {
      double d = (double) got[i] - want[i];
      num += d * d;
      den += (double) want[i] * want[i];
    }
    return Math.sqrt(num / Math.max(den, 1e-30));
  }

  /** Asserts no NaN (an unwritten poisoned element) and a relative error within {@code tol}. */
  public static void assertClose(String what, float[] got, float[] want, double tol) {
    assertThat(got).as(what + ": length").hasSize(want.length);
    for (int i = 0; i < got.length; i++) {
      if (Float.isNaN(got[i]) || Float.isInfinite(got[i])) {
        throw new AssertionError(what + ": element " + i + " is " + got[i] + " (not written?)");
      }
    }
    double err = relativeError(got, want);
    assertThat(err).as(what + ": relative error").isLessThanOrEqualTo(tol);
  }
}
