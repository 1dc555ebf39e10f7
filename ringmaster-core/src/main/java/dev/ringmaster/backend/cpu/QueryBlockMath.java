package dev.ringmaster.backend.cpu;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * {@link VectorMath#scoresT} and {@link VectorMath#axpyRows} for four queries over the same keys at
 * once: four heads of one token against one sequence's latent cache. Each key vector is loaded once
 * for all four queries instead of once per query, which is what bounds the one-query loops (one
 * fused multiply-add per load). Every output lane is the same chain of fused multiply-adds in the
 * same order as the one-query method computes it, so the results are bit for bit those of four
 * one-query calls, whichever queries share a block.
 *
 * <p>Fewer than four queries repeat one of them: pass the same arrays twice and the same values are
 * written twice.
 */
public final class QueryBlockMath {
  private static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED;
  private static final int LANES = F.length();
  private static final int TILE = VectorMath.columnTile(); // the layout of transpose's columns

  private QueryBlockMath() {}

  /**
   * Four {@link VectorMath#scoresT} calls over the same columns {@code t} ({@code n} wide) and
   * {@code u} ({@code m} wide): query {@code k}'s first part at {@code a[k][aOff[k]..]}, its second
   * at {@code b[bOff[k]..]}, its scores into {@code out[k]} (each holding {@code count} rounded up
   * to {@link VectorMath#lanes}).
   */
  public static void scoresT4(
      float[][] a,
      int[] aOff,
      float[] t,
      int n,
      float[] b,
      int[] bOff,
      float[] u,
      int m,
      int count,
      float scale,
      float[][] out) {
    if (t.length < VectorMath.columnsSize(n, count)
        || u.length < VectorMath.columnsSize(m, count)) {
      throw new IllegalArgumentException("columns shorter than " + count + " positions");
    }
    float[] a0 = a[0];
    float[] a1 = a[1];
    float[] a2 = a[2];
    float[] a3 = a[3];
    int o0 = aOff[0];
    int o1 = aOff[1];
    int o2 = aOff[2];
    int o3 = aOff[3];
    int b0 = bOff[0];
    int b1 = bOff[1];
    int b2 = bOff[2];
    int b3 = bOff[3];
    int padded = (count + LANES - 1) / LANES * LANES;
    int j = 0;
    // Half a tile at a time: two position vectors times four queries, eight independent chains
    // (sixteen would leave too few registers for the loads and broadcasts).
    for (; j + TILE <= padded; j += TILE) {
      for (int half = 0; half < TILE; half += 2 * LANES) {
        int tBase = j * n + half;
        FloatVector z = FloatVector.zero(F);
        FloatVector s00 = z, s01 = z, s10 = z, s11 = z;
        FloatVector s20 = z, s21 = z, s30 = z, s31 = z;
        for (int d = 0; d < n; d++) {
          int base = tBase + d * TILE;
          FloatVector k0 = FloatVector.fromArray(F, t, base);
          FloatVector k1 = FloatVector.fromArray(F, t, base + LANES);
          FloatVector q = FloatVector.broadcast(F, a0[o0 + d]);
          s00 = k0.fma(q, s00);
          s01 = k1.fma(q, s01);
          q = FloatVector.broadcast(F, a1[o1 + d]);
          s10 = k0.fma(q, s10);
          s11 = k1.fma(q, s11);
          q = FloatVector.broadcast(F, a2[o2 + d]);
          s20 = k0.fma(q, s20);
          s21 = k1.fma(q, s21);
          q = FloatVector.broadcast(F, a3[o3 + d]);
          s30 = k0.fma(q, s30);
          s31 = k1.fma(q, s31);
        }
        int uBase = j * m + half;
        for (int e = 0; e < m; e++) {
          int base = uBase + e * TILE;
          FloatVector k0 = FloatVector.fromArray(F, u, base);
          FloatVector k1 = FloatVector.fromArray(F, u, base + LANES);
          FloatVector q = FloatVector.broadcast(F, b[b0 + e]);
          s00 = k0.fma(q, s00);
          s01 = k1.fma(q, s01);
          q = FloatVector.broadcast(F, b[b1 + e]);
          s10 = k0.fma(q, s10);
          s11 = k1.fma(q, s11);
          q = FloatVector.broadcast(F, b[b2 + e]);
          s20 = k0.fma(q, s20);
          s21 = k1.fma(q, s21);
          q = FloatVector.broadcast(F, b[b3 + e]);
          s30 = k0.fma(q, s30);
          s31 = k1.fma(q, s31);
        }
        int at = j + half;
        store2(s00, s01, scale, out[0], at);
        store2(s10, s11, scale, out[1], at);
        store2(s20, s21, scale, out[2], at);
        store2(s30, s31, scale, out[3], at);
      }
    }
    // The last one to three position vectors, one at a time: four chains per vector.
    for (; j < padded; j += LANES) {
      int tBase = j / TILE * TILE * n + j % TILE;
      int uBase = j / TILE * TILE * m + j % TILE;
      FloatVector z = FloatVector.zero(F);
      FloatVector s0 = z, s1 = z, s2 = z, s3 = z;
      for (int d = 0; d < n; d++) {
        FloatVector k = FloatVector.fromArray(F, t, tBase + d * TILE);
        s0 = k.fma(FloatVector.broadcast(F, a0[o0 + d]), s0);
        s1 = k.fma(FloatVector.broadcast(F, a1[o1 + d]), s1);
        s2 = k.fma(FloatVector.broadcast(F, a2[o2 + d]), s2);
        s3 = k.fma(FloatVector.broadcast(F, a3[o3 + d]), s3);
      }
      for (int e = 0; e < m; e++) {
        FloatVector k = FloatVector.fromArray(F, u, uBase + e * TILE);
        s0 = k.fma(FloatVector.broadcast(F, b[b0 + e]), s0);
        s1 = k.fma(FloatVector.broadcast(F, b[b1 + e]), s1);
        s2 = k.fma(FloatVector.broadcast(F, b[b2 + e]), s2);
        s3 = k.fma(FloatVector.broadcast(F, b[b3 + e]), s3);
      }
      s0.mul(scale).intoArray(out[0], j);
      s1.mul(scale).intoArray(out[1], j);
      s2.mul(scale).intoArray(out[2], j);
      s3.mul(scale).intoArray(out[3], j);
    }
  }

  private static void store2(FloatVector s0, FloatVector s1, float scale, float[] out, int j) {
    s0.mul(scale).intoArray(out, j);
    s1.mul(scale).intoArray(out, j + LANES);
  }

  /**
   * Four {@link VectorMath#axpyRows} calls over the same rows of {@code x}: {@code y[k][i] += sum_j
   * w[k][j] * x[xOffs[j] + i]} for {@code j < count}, {@code i < n}, the bits of those calls. The
   * {@code y[k]} are added to; a {@code y} passed twice must come with the same {@code w} both
   * times.
   */
  public static void axpyRows4(float[][] w, float[] x, int[] xOffs, int count, float[][] y, int n) {
    float[] w0 = w[0];
    float[] w1 = w[1];
    float[] w2 = w[2];
    float[] w3 = w[3];
    float[] y0 = y[0];
    float[] y1 = y[1];
    float[] y2 = y[2];
    float[] y3 = y[3];
    int bound = F.loopBound(n);
    int i = 0;
    // Two output vectors of four queries per pass (eight chains, two row loads per row): sixteen
    // chains would leave no registers for the loads and broadcasts on 16-register machines.
    for (; i + 2 * LANES <= bound; i += 2 * LANES) {
      FloatVector a0 = FloatVector.fromArray(F, y0, i);
      FloatVector a1 = FloatVector.fromArray(F, y0, i + LANES);
      FloatVector b0 = FloatVector.fromArray(F, y1, i);
      FloatVector b1 = FloatVector.fromArray(F, y1, i + LANES);
      FloatVector c0 = FloatVector.fromArray(F, y2, i);
      FloatVector c1 = FloatVector.fromArray(F, y2, i + LANES);
      FloatVector d0 = FloatVector.fromArray(F, y3, i);
      FloatVector d1 = FloatVector.fromArray(F, y3, i + LANES);
      for (int j = 0; j < count; j++) {
        int xo = xOffs[j] + i;
        FloatVector x0 = FloatVector.fromArray(F, x, xo);
        FloatVector x1 = FloatVector.fromArray(F, x, xo + LANES);
        FloatVector v = FloatVector.broadcast(F, w0[j]);
        a0 = x0.fma(v, a0);
        a1 = x1.fma(v, a1);
        v = FloatVector.broadcast(F, w1[j]);
        b0 = x0.fma(v, b0);
        b1 = x1.fma(v, b1);
        v = FloatVector.broadcast(F, w2[j]);
        c0 = x0.fma(v, c0);
        c1 = x1.fma(v, c1);
        v = FloatVector.broadcast(F, w3[j]);
        d0 = x0.fma(v, d0);
        d1 = x1.fma(v, d1);
      }
      a0.intoArray(y0, i);
      a1.intoArray(y0, i + LANES);
      b0.intoArray(y1, i);
      b1.intoArray(y1, i + LANES);
      c0.intoArray(y2, i);
      c1.intoArray(y2, i + LANES);
      d0.intoArray(y3, i);
      d1.intoArray(y3, i + LANES);
    }
    if (i < n) {
      int[] offs = new int[count];
      for (int j = 0; j < count; j++) {
        offs[j] = xOffs[j] + i;
      }
      for (int k = 0; k < 4; k++) {
        if (seenBefore(y, k)) {
          continue;
        }
        VectorMath.axpyRows(w[k], 0, x, offs, count, y[k], i, n - i);
      }
    }
  }

  private static boolean seenBefore(float[][] y, int k) {
    for (int p = 0; p < k; p++) {
      if (y[p] == y[k]) {
        return true;
      }
    }
    return false;
  }
}
