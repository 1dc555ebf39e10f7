package dev.ringmaster.backend.cpu;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** Four queries in one pass give the bits of four one-query calls, repeated queries included. */
class QueryBlockMathTest {
  @Test
  void fourQueryScoresEqualOneQueryScoresBitForBit() {
    SplittableRandom random = new SplittableRandom(11);
    int lanes = VectorMath.lanes();
    int tile = VectorMath.columnTile();
    for (int count :
        new int[] {1, lanes - 1, lanes, 2 * lanes + 3, tile, tile + 1, 3 * tile + 2 * lanes + 7}) {
      for (int[] dims : new int[][] {{64, 16}, {512, 64}, {7, 3}}) {
        int n = dims[0];
        int m = dims[1];
        float[] t = new float[VectorMath.columnsSize(n, count)];
        float[] u = new float[VectorMath.columnsSize(m, count)];
        VectorMath.transpose(floats(random, count * n), n, count, t);
        VectorMath.transpose(floats(random, count * m), m, count, u);
        float[][] a = new float[4][];
        int[] aOff = new int[4];
        int[] bOff = new int[4];
        float[] b = floats(random, 4 * m + 9);
        for (int k = 0; k < 4; k++) {
          aOff[k] = k + 1;
          a[k] = floats(random, n + aOff[k]);
          bOff[k] = 2 + k * m;
        }
        int padded = (count + lanes - 1) / lanes * lanes;
        float[][] out = new float[4][padded];
        QueryBlockMath.scoresT4(a, aOff, t, n, b, bOff, u, m, count, 0.3f, out);
        for (int k = 0; k < 4; k++) {
          float[] one = new float[padded];
          VectorMath.scoresT(a[k], aOff[k], t, n, b, bOff[k], u, m, count, 0.3f, one);
          for (int j = 0; j < count; j++) {
            assertThat(Float.floatToRawIntBits(out[k][j]))
                .as("count=%d n=%d query %d position %d", count, n, k, j)
                .isEqualTo(Float.floatToRawIntBits(one[j]));
          }
        }
      }
    }
  }

  @Test
  void repeatedQueriesWriteTheSameScores() {
    SplittableRandom random = new SplittableRandom(12);
    int n = 64;
    int m = 16;
    int count = 3 * VectorMath.columnTile() + 5;
    float[] t = new float[VectorMath.columnsSize(n, count)];
    float[] u = new float[VectorMath.columnsSize(m, count)];
    VectorMath.transpose(floats(random, count * n), n, count, t);
    VectorMath.transpose(floats(random, count * m), m, count, u);
    float[] q0 = floats(random, n);
    float[] q1 = floats(random, n);
    float[] b = floats(random, 2 * m);
    int padded = (count + VectorMath.lanes() - 1) / VectorMath.lanes() * VectorMath.lanes();
    float[] s0 = new float[padded];
    float[] s1 = new float[padded];
    QueryBlockMath.scoresT4(
        new float[][] {q0, q1, q1, q1},
        new int[4],
        t,
        n,
        b,
        new int[] {0, m, m, m},
        u,
        m,
        count,
        1f,
        new float[][] {s0, s1, s1, s1});
    float[] one = new float[padded];
    VectorMath.scoresT(q1, 0, t, n, b, m, u, m, count, 1f, one);
    for (int j = 0; j < count; j++) {
      assertThat(s1[j]).isEqualTo(one[j]);
    }
  }

  @Test
  void fourQueryContextsEqualOneQueryContextsBitForBit() {
    SplittableRandom random = new SplittableRandom(13);
    int lanes = VectorMath.lanes();
    for (int n : new int[] {3, lanes, 2 * lanes, 64, 64 + lanes + 3, 512}) {
      for (int count : new int[] {1, 5, 130}) {
        float[] x = floats(random, count * n + 4);
        int[] offs = new int[count];
        for (int j = 0; j < count; j++) {
          offs[j] = (j * 7 % count) * n + 4 * (j % 2);
        }
        float[][] w = new float[4][];
        float[][] y = new float[4][];
        for (int k = 0; k < 4; k++) {
          w[k] = floats(random, count);
          y[k] = new float[n];
        }
        // The last query repeated: a block of three heads.
        w[3] = w[2];
        y[3] = y[2];
        QueryBlockMath.axpyRows4(w, x, offs, count, y, n);
        for (int k = 0; k < 3; k++) {
          float[] one = new float[n];
          VectorMath.axpyRows(w[k], x, offs, count, one, 0, n);
          for (int i = 0; i < n; i++) {
            assertThat(Float.floatToRawIntBits(y[k][i]))
                .as("n=%d count=%d query %d element %d", n, count, k, i)
                .isEqualTo(Float.floatToRawIntBits(one[i]));
          }
        }
      }
    }
  }

  @Test
  void fourQueryContextsAddToWhatTheOutputsHoldAsOneQueryCallsDo() {
    SplittableRandom random = new SplittableRandom(9);
    for (int n : new int[] {1, 15, 16, 64, 70, 80}) {
      for (int count : new int[] {0, 1, 5, 33}) {
        float[] x = floats(random, (count + 2) * n);
        int[] offs = new int[count];
        for (int j = 0; j < count; j++) {
          offs[j] = random.nextInt(count + 2) * n;
        }
        float[][] w = new float[4][];
        float[][] expected = new float[4][];
        float[][] actual = new float[4][];
        for (int k = 0; k < 4; k++) {
          w[k] = floats(random, count);
          expected[k] = floats(random, n);
          actual[k] = expected[k].clone();
          VectorMath.axpyRows(w[k], x, offs, count, expected[k], 0, n);
        }
        QueryBlockMath.axpyRows4(w, x, offs, count, actual, n);
        for (int k = 0; k < 4; k++) {
          assertThat(actual[k])
              .as("query %d, n=%d rows=%d", k, n, count)
              .containsExactly(expected[k]);
        }
      }
    }
  }

  private static float[] floats(SplittableRandom random, int n) {
    float[] f = new float[n];
    for (int i = 0; i < n; i++) {
      f[i] = (float) (random.nextDouble() * 2 - 1);
    }
    return f;
  }
}
