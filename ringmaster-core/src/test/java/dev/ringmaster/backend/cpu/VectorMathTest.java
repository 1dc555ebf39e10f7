package dev.ringmaster.backend.cpu;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The batched attention helpers give the bits of the one-row operations they stand for. */
class VectorMathTest {
  @Test
  void dot4MatchesFourDotsBitForBit() {
    SplittableRandom random = new SplittableRandom(3);
    for (int n : new int[] {1, 7, 16, 17, 48, 64, 100}) {
      float[] a = floats(random, n + 5);
      float[] b = floats(random, 9 * n + 11);
      int[] offs = {3, 4 * n + 1, 2, 8 * n + 11 - n};
      float[] out = new float[6];
      VectorMath.dot4(a, 5, b, offs[0], offs[1], offs[2], offs[3], n, out, 2);
      for (int k = 0; k < 4; k++) {
        assertThat(Float.floatToRawIntBits(out[2 + k]))
            .as("n=%d row %d", n, k)
            .isEqualTo(Float.floatToRawIntBits(VectorMath.dot(a, 5, b, offs[k], n)));
      }
    }
  }

  @Test
  void columnScoresAreOneChainPerPosition() {
    SplittableRandom random = new SplittableRandom(5);
    int lanes = VectorMath.lanes();
    for (int count :
        new int[] {
          1, lanes - 1, lanes, lanes + 1, 2 * lanes + 5, 4 * lanes + 3, 7 * lanes, 9 * lanes
        }) {
      int n = 64;
      int m = 16;
      float[] keys = floats(random, count * n + 7);
      float[] rope = floats(random, count * m);
      int padded = (count + lanes - 1) / lanes * lanes;
      float[] t = new float[VectorMath.columnsSize(n, count)];
      float[] u = new float[VectorMath.columnsSize(m, count)];
      VectorMath.transpose(keys, n, count, t);
      VectorMath.transpose(rope, m, count, u);
      int tile = VectorMath.columnTile();
      for (int j = 0; j < count; j++) {
        for (int d = 0; d < n; d++) {
          assertThat(t[j / tile * n * tile + d * tile + j % tile]).isEqualTo(keys[j * n + d]);
        }
      }
      float[] a = floats(random, n + 2);
      float[] b = floats(random, m + 1);
      float[] out = new float[padded];
      VectorMath.scoresT(a, 2, t, n, b, 1, u, m, count, 0.125f, out);
      for (int j = 0; j < count; j++) {
        float chain = 0f;
        for (int d = 0; d < n; d++) {
          chain = Math.fma(a[2 + d], keys[j * n + d], chain);
        }
        for (int e = 0; e < m; e++) {
          chain = Math.fma(b[1 + e], rope[j * m + e], chain);
        }
        assertThat(Float.floatToRawIntBits(out[j]))
            .as("count %d position %d", count, j)
            .isEqualTo(Float.floatToRawIntBits(chain * 0.125f));
      }
    }
  }

  @Test
  void axpyRowsMatchesAxpyPerRowBitForBit() {
    SplittableRandom random = new SplittableRandom(4);
    for (int n : new int[] {1, 15, 16, 64, 70}) {
      for (int count : new int[] {0, 1, 5, 33}) {
        float[] x = floats(random, (count + 2) * n);
        float[] w = floats(random, count);
        int[] offs = new int[count];
        for (int j = 0; j < count; j++) {
          offs[j] = random.nextInt(count + 2) * n;
        }
        float[] expected = floats(random, n + 3);
        float[] actual = expected.clone();
        for (int j = 0; j < count; j++) {
          VectorMath.axpy(w[j], x, offs[j], expected, 3, n);
        }
        float[] shifted = actual.clone();
        VectorMath.axpyRows(w, x, offs, count, actual, 3, n);
        assertThat(actual).as("n=%d rows=%d", n, count).containsExactly(expected);
        float[] wShifted = new float[count + 2];
        System.arraycopy(w, 0, wShifted, 2, count);
        VectorMath.axpyRows(wShifted, 2, x, offs, count, shifted, 3, n);
        assertThat(shifted).as("n=%d rows=%d, weights at 2", n, count).containsExactly(expected);
      }
    }
  }

  private static float[] floats(SplittableRandom random, int count) {
    float[] x = new float[count];
    for (int i = 0; i < count; i++) {
      x[i] = (float) (random.nextDouble() * 2 - 1);
    }
    return x;
  }
}
