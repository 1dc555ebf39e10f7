package dev.ringmaster.backend.cpu;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The row-interleaved RMSNorm gives each row the bits of the one-row loop. */
class CpuOpsTest {
  @Test
  void rmsNormOfManyRowsEqualsEachRowAloneBitForBit() {
    SplittableRandom random = new SplittableRandom(11);
    int dim = 67;
    int stride = 80;
    float[] weight = new float[dim];
    for (int i = 0; i < dim; i++) {
      weight[i] = (float) (random.nextDouble() * 2);
    }
    for (int rows = 1; rows <= 9; rows++) {
      float[] x = new float[5 + rows * stride];
      for (int i = 0; i < x.length; i++) {
        x[i] = (float) (random.nextDouble() * 8 - 4);
      }
      float[] expected = x.clone();
      for (int r = 0; r < rows; r++) {
        referenceRow(expected, 5 + r * stride, dim, weight, 1e-6);
      }
      CpuOps.rmsNorm(x, 5, rows, dim, stride, weight, 1e-6);
      assertThat(x).as("%d rows", rows).containsExactly(expected);
    }
  }

  /** transformers' RMSNorm in f32 with the sum of squares in double, one element at a time. */
  private static void referenceRow(float[] x, int base, int dim, float[] weight, double eps) {
    double sumSq = 0;
    for (int i = 0; i < dim; i++) {
      float v = x[base + i];
      sumSq += v * v;
    }
    float variance = (float) (sumSq / dim);
    float inv = (float) (1.0 / Math.sqrt(variance + (float) eps));
    for (int i = 0; i < dim; i++) {
      x[base + i] = weight[i] * (x[base + i] * inv);
    }
  }
}
