package dev.ringmaster.backend.cpu;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.SplittableRandom;
import jdk.incubator.vector.FloatVector;
import org.junit.jupiter.api.Test;

/** The vectorised exponential and softmax against the JDK's and against themselves. */
class VectorSoftmaxTest {
  private static final int LANES = FloatVector.SPECIES_PREFERRED.length();

  @Test
  void expIsWithinTwoUlpOfMathExp() {
    double worst = 0;
    for (float x = -87.3f; x < 88.72f; x += 0.00137f) {
      float expected = (float) Math.exp(x);
      double ulps = Math.abs(VectorMath.exp(x) - expected) / Math.ulp(expected);
      worst = Math.max(worst, ulps);
    }
    assertThat(worst).as("worst error in ulp").isLessThanOrEqualTo(2);
    assertThat(VectorMath.exp(0f)).isEqualTo(1f);
    assertThat(VectorMath.exp(-100f)).isZero();
    assertThat(VectorMath.exp(Float.NEGATIVE_INFINITY)).isZero();
    assertThat(VectorMath.exp(100f)).isEqualTo(Float.POSITIVE_INFINITY);
    assertThat(VectorMath.exp(Float.NaN)).isNaN();
  }

  @Test
  void softmaxMatchesADoublePrecisionSoftmax() {
    SplittableRandom random = new SplittableRandom(5);
    for (int n : new int[] {1, 3, LANES, LANES + 1, 3 * LANES + 5, 300}) {
      float[] x = new float[n + 2];
      for (int i = 0; i < x.length; i++) {
        x[i] = (float) (random.nextDouble() * 40 - 30);
      }
      double max = Double.NEGATIVE_INFINITY;
      for (int i = 0; i < n; i++) {
        max = Math.max(max, x[1 + i]);
      }
      double sum = 0;
      for (int i = 0; i < n; i++) {
        sum += Math.exp(x[1 + i] - max);
      }
      float[] y = x.clone();
      VectorMath.softmax(y, 1, n);
      for (int i = 0; i < n; i++) {
        // x - max is rounded to f32 first, as the kernel does: about 2e-6 relative at |x - max| 30
        double expected = Math.exp(x[1 + i] - max) / sum;
        assertThat((double) y[1 + i])
            .as("n=%d i=%d", n, i)
            .isCloseTo(expected, org.assertj.core.data.Offset.offset(4e-6 * expected + 1e-30));
      }
      assertThat(y[0]).as("left of the row").isEqualTo(x[0]);
      assertThat(y[n + 1]).as("right of the row").isEqualTo(x[n + 1]);
    }
  }

  @Test
  void equalScoresGetEqualBitsInVectorLanesAndInTheTail() {
    SplittableRandom random = new SplittableRandom(6);
    float[] values = {-3.25f, -0.5f, 0f, -17.125f, 1.75f};
    int n = 3 * LANES + 5;
    float[] x = new float[n];
    for (int i = 0; i < n; i++) {
      x[i] = values[random.nextInt(values.length)];
    }
    x[n - 1] = values[0]; // the tail holds each value that the lanes hold
    x[n - 2] = values[1];
    x[n - 3] = values[2];
    x[n - 4] = values[3];
    x[n - 5] = values[4];
    float[] y = x.clone();
    VectorMath.softmax(y, 0, n);
    for (int i = 0; i < n; i++) {
      for (int j = 0; j < n; j++) {
        if (x[i] == x[j]) {
          assertThat(Float.floatToRawIntBits(y[i]))
              .as("%d and %d", i, j)
              .isEqualTo(Float.floatToRawIntBits(y[j]));
        }
      }
    }
  }

  @Test
  void aRowGivesTheSameBitsAtAnyOffset() {
    SplittableRandom random = new SplittableRandom(7);
    int n = 2 * LANES + 3;
    float[] row = new float[n];
    for (int i = 0; i < n; i++) {
      row[i] = (float) (random.nextDouble() * 10 - 5);
    }
    float[] a = row.clone();
    VectorMath.softmax(a, 0, n);
    float[] shifted = new float[n + 7];
    System.arraycopy(row, 0, shifted, 7, n);
    VectorMath.softmax(shifted, 7, n);
    for (int i = 0; i < n; i++) {
      assertThat(Float.floatToRawIntBits(shifted[7 + i])).isEqualTo(Float.floatToRawIntBits(a[i]));
    }
  }
}
