package dev.ringmaster.backend.cpu;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;

/**
 * Vectorised dot products and scaled additions on f32 activations, for the attention cores (scores
 * against cached keys or latents, accumulation of values). Each lane accumulates its slice of the
 * product in a fixed order, the lanes are then summed by a fixed pairwise tree and any tail that
 * does not fill a vector is added last, element by element: a result depends only on its inputs,
 * never on the batch, the thread that computes it or the JIT's state.
 */
public final class VectorMath {
  private static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED;
  private static final int LANES = F.length();
  private static final int TILE = 4 * LANES;
  private static final VectorShuffle<Float> FOLD_8 = fold(8);
  private static final VectorShuffle<Float> FOLD_4 = fold(4);
  private static final VectorShuffle<Float> FOLD_2 = fold(2);
  private static final VectorShuffle<Float> FOLD_1 = fold(1);
  // dot4 folds four accumulators through the two widest folds together, then the narrow ones.
  private static final int H1 = LANES / 2;
  private static final int H2 = LANES / 4;
  private static final VectorShuffle<Float> FOLD_H1 = fold(H1);
  private static final VectorShuffle<Float> FOLD_H2 = fold(H2);
  private static final VectorMask<Float> UPPER_H1 = upper(H1);
  private static final VectorMask<Float> UPPER_H2 = upper(H2);

  // exp(x) = 2^k * e^r with k = round(x / ln 2) and r = x - k ln 2 (ln 2 split in two parts so
  // that k * LN2_HI is exact), e^r from Cephes' expf polynomial on |r| <= ln(2) / 2.
  private static final float LOG2E = 1.44269504088896341f;
  private static final float LN2_HI = 0.693359375f;
  private static final float LN2_LO = -2.12194440e-4f;
  // Adding and subtracting 1.5 * 2^23 rounds a float of magnitude below 2^22 to an integer.
  private static final float ROUND = 12582912f;
  private static final float P0 = 1.9875691500e-4f;
  private static final float P1 = 1.3981999507e-3f;
  private static final float P2 = 8.3334519073e-3f;
  private static final float P3 = 4.1665795894e-2f;
  private static final float P4 = 1.6666665459e-1f;
  private static final float P5 = 5.0000001201e-1f;

  /** Below ln of the smallest normal float, {@link #exp} returns 0. */
  private static final float EXP_LOW = -87.33654f;

  /** Above ln of the largest float, {@link #exp} returns infinity. */
  private static final float EXP_HIGH = 88.72283f;

  private VectorMath() {}

  /**
   * Softmax of {@code n} values at {@code off}, in place, in f32 with max subtraction. The
   * exponentials are {@link #exp}, the same bits in every lane and in the tail; their sum is taken
   * per lane, then by the fixed lane tree, then the tail in order, so a row's result depends only
   * on the row.
   */
  public static void softmax(float[] x, int off, int n) {
    int bound = F.loopBound(n);
    float max = Float.NEGATIVE_INFINITY;
    int i = 0;
    if (bound > 0) {
      FloatVector m = FloatVector.broadcast(F, Float.NEGATIVE_INFINITY);
      for (; i < bound; i += LANES) {
        m = m.max(FloatVector.fromArray(F, x, off + i));
      }
      max = m.reduceLanes(VectorOperators.MAX); // exact in any order
    }
    for (; i < n; i++) {
      max = Math.max(max, x[off + i]);
    }
    float sum = 0f;
    i = 0;
    if (bound > 0) {
      FloatVector maxV = FloatVector.broadcast(F, max);
      FloatVector acc = FloatVector.zero(F);
      for (; i < bound; i += LANES) {
        FloatVector e = exp(FloatVector.fromArray(F, x, off + i).sub(maxV));
        e.intoArray(x, off + i);
        acc = acc.add(e);
      }
      sum = sum(acc);
    }
    for (; i < n; i++) {
      float e = exp(x[off + i] - max);
      x[off + i] = e;
      sum += e;
    }
    float inv = 1f / sum;
    i = 0;
    for (; i < bound; i += LANES) {
      FloatVector.fromArray(F, x, off + i).mul(inv).intoArray(x, off + i);
    }
    for (; i < n; i++) {
      x[off + i] *= inv;
    }
  }

  /**
   * e^x in f32 from IEEE additions, multiplications and fused multiply-adds only, so it gives the
   * same bits as every lane of the vector form, compiled or interpreted (the Vector API's own
   * {@code EXP} calls a different library once compiled). Within 2 ulp of {@link Math#exp} for
   * results of at least {@link Float#MIN_NORMAL}; 0 below that (softmax weights under 1e-38) and
   * infinity above the largest float.
   */
  public static float exp(float x) {
    if (x < EXP_LOW) {
      return 0f;
    }
    if (x > EXP_HIGH) {
      return Float.POSITIVE_INFINITY;
    }
    float k = (x * LOG2E + ROUND) - ROUND;
    float r = Math.fma(k, -LN2_HI, x);
    r = Math.fma(k, -LN2_LO, r);
    float p = Math.fma(P0, r, P1);
    p = Math.fma(p, r, P2);
    p = Math.fma(p, r, P3);
    p = Math.fma(p, r, P4);
    p = Math.fma(p, r, P5);
    float y = Math.fma(p, r * r, r) + 1f;
    // 2^k in two exact factors: k reaches 128 just below the overflow threshold.
    int ka = (int) k >> 1;
    int kb = (int) k - ka;
    return y * Float.intBitsToFloat((ka + 127) << 23) * Float.intBitsToFloat((kb + 127) << 23);
  }

  /** {@link #exp} of every lane. */
  private static FloatVector exp(FloatVector x) {
    FloatVector k = x.mul(LOG2E).add(ROUND).sub(ROUND);
    FloatVector r = k.fma(FloatVector.broadcast(F, -LN2_HI), x);
    r = k.fma(FloatVector.broadcast(F, -LN2_LO), r);
    FloatVector p = FloatVector.broadcast(F, P0).fma(r, FloatVector.broadcast(F, P1));
    p = p.fma(r, FloatVector.broadcast(F, P2));
    p = p.fma(r, FloatVector.broadcast(F, P3));
    p = p.fma(r, FloatVector.broadcast(F, P4));
    p = p.fma(r, FloatVector.broadcast(F, P5));
    FloatVector y = p.fma(r.mul(r), r).add(1f);
    IntVector ki = (IntVector) k.convert(VectorOperators.F2I, 0);
    IntVector ka = ki.lanewise(VectorOperators.ASHR, 1);
    IntVector kb = ki.sub(ka);
    y = y.mul(ka.add(127).lanewise(VectorOperators.LSHL, 23).reinterpretAsFloats());
    y = y.mul(kb.add(127).lanewise(VectorOperators.LSHL, 23).reinterpretAsFloats());
    return y.blend(0f, x.compare(VectorOperators.LT, EXP_LOW))
        .blend(Float.POSITIVE_INFINITY, x.compare(VectorOperators.GT, EXP_HIGH));
  }

  /** Lanes of the float vectors these methods use. */
  public static int lanes() {
    return LANES;
  }

  /** Positions per tile of {@link #transpose}'s layout: four vectors' lanes. */
  public static int columnTile() {
    return TILE;
  }

  /** Floats {@link #transpose} writes for {@code count} rows of {@code width}: whole tiles. */
  public static int columnsSize(int width, int count) {
    return (count + TILE - 1) / TILE * TILE * width;
  }

  /**
   * Writes rows {@code 0..count-1} of {@code src} ({@code width} floats each, row {@code j} at
   * {@code j * width}) as columns in tiles of {@link #columnTile} positions: {@code dst[(j / T) *
   * width * T + d * T + j % T] = src[j * width + d]}, so a tile's columns lie one after another and
   * {@link #scoresT} streams them with constant offsets. Whole vectors of rows are gathered, the
   * rest copied one by one; {@code dst} holds {@link #columnsSize} floats.
   */
  public static void transpose(float[] src, int width, int count, float[] dst) {
    if (dst.length < columnsSize(width, count)) {
      throw new IllegalArgumentException(
          "columns need " + columnsSize(width, count) + " floats, got " + dst.length);
    }
    int[] rowsOf = new int[LANES];
    for (int l = 0; l < LANES; l++) {
      rowsOf[l] = l * width;
    }
    int j = 0;
    for (; j + LANES <= count; j += LANES) {
      int base = j / TILE * width * TILE + j % TILE;
      for (int d = 0; d < width; d++) {
        FloatVector.fromArray(F, src, j * width + d, rowsOf, 0).intoArray(dst, base + d * TILE);
      }
    }
    for (; j < count; j++) {
      int base = j / TILE * width * TILE + j % TILE;
      for (int d = 0; d < width; d++) {
        dst[base + d * TILE] = src[j * width + d];
      }
    }
  }

  /**
   * Attention scores against keys held as columns ({@link #transpose}): for {@code j < count},
   * {@code out[j] = scale * (sum_d a[aOff + d] * t[column d, position j] for d < n, then sum_e
   * b[bOff + e] * u[column e, position j] for e < m)}, each one fused multiply-add chain in that
   * order, one position per lane, so no lanes are summed. {@code out} holds {@code count} rounded
   * up to {@link #lanes}; lanes past {@code count} get whatever the padding of {@code t} and {@code
   * u} gives.
   */
  public static void scoresT(
      float[] a,
      int aOff,
      float[] t,
      int n,
      float[] b,
      int bOff,
      float[] u,
      int m,
      int count,
      float scale,
      float[] out) {
    int padded = (count + LANES - 1) / LANES * LANES;
    if (t.length < columnsSize(n, count) || u.length < columnsSize(m, count)) {
      throw new IllegalArgumentException("columns shorter than " + count + " positions");
    }
    int j = 0;
    // A whole tile, four position vectors: four independent chains hide the FMA latency, and the
    // tile's columns are consecutive (offsets d * TILE + constant).
    for (; j + TILE <= padded; j += TILE) {
      int tBase = j * n;
      int uBase = j * m;
      FloatVector s0 = FloatVector.zero(F);
      FloatVector s1 = s0;
      FloatVector s2 = s0;
      FloatVector s3 = s0;
      for (int d = 0; d < n; d++) {
        FloatVector av = FloatVector.broadcast(F, a[aOff + d]);
        int base = tBase + d * TILE;
        s0 = FloatVector.fromArray(F, t, base).fma(av, s0);
        s1 = FloatVector.fromArray(F, t, base + LANES).fma(av, s1);
        s2 = FloatVector.fromArray(F, t, base + 2 * LANES).fma(av, s2);
        s3 = FloatVector.fromArray(F, t, base + 3 * LANES).fma(av, s3);
      }
      for (int e = 0; e < m; e++) {
        FloatVector bv = FloatVector.broadcast(F, b[bOff + e]);
        int base = uBase + e * TILE;
        s0 = FloatVector.fromArray(F, u, base).fma(bv, s0);
        s1 = FloatVector.fromArray(F, u, base + LANES).fma(bv, s1);
        s2 = FloatVector.fromArray(F, u, base + 2 * LANES).fma(bv, s2);
        s3 = FloatVector.fromArray(F, u, base + 3 * LANES).fma(bv, s3);
      }
      s0.mul(scale).intoArray(out, j);
      s1.mul(scale).intoArray(out, j + LANES);
      s2.mul(scale).intoArray(out, j + 2 * LANES);
      s3.mul(scale).intoArray(out, j + 3 * LANES);
    }
    // The last one to three position vectors (a partial tile) in one pass, as independent chains:
    // one chain a pass would wait on each fused multiply-add's latency.
    int rest = (padded - j) / LANES;
    int tBase = j * n;
    int uBase = j * m;
    if (rest >= 2) {
      FloatVector s0 = FloatVector.zero(F);
      FloatVector s1 = s0;
      FloatVector s2 = s0;
      boolean three = rest == 3;
      for (int d = 0; d < n; d++) {
        FloatVector av = FloatVector.broadcast(F, a[aOff + d]);
        int base = tBase + d * TILE;
        s0 = FloatVector.fromArray(F, t, base).fma(av, s0);
        s1 = FloatVector.fromArray(F, t, base + LANES).fma(av, s1);
        if (three) {
          s2 = FloatVector.fromArray(F, t, base + 2 * LANES).fma(av, s2);
        }
      }
      for (int e = 0; e < m; e++) {
        FloatVector bv = FloatVector.broadcast(F, b[bOff + e]);
        int base = uBase + e * TILE;
        s0 = FloatVector.fromArray(F, u, base).fma(bv, s0);
        s1 = FloatVector.fromArray(F, u, base + LANES).fma(bv, s1);
        if (three) {
          s2 = FloatVector.fromArray(F, u, base + 2 * LANES).fma(bv, s2);
        }
      }
      s0.mul(scale).intoArray(out, j);
      s1.mul(scale).intoArray(out, j + LANES);
      if (three) {
        s2.mul(scale).intoArray(out, j + 2 * LANES);
      }
    } else if (rest == 1) {
      FloatVector s0 = FloatVector.zero(F);
      for (int d = 0; d < n; d++) {
        s0 =
            FloatVector.fromArray(F, t, tBase + d * TILE)
                .fma(FloatVector.broadcast(F, a[aOff + d]), s0);
      }
      for (int e = 0; e < m; e++) {
        s0 =
            FloatVector.fromArray(F, u, uBase + e * TILE)
                .fma(FloatVector.broadcast(F, b[bOff + e]), s0);
      }
      s0.mul(scale).intoArray(out, j);
    }
  }

  /** {@code sum_i a[aOff + i] * b[bOff + i]} for {@code i < n}. */
  public static float dot(float[] a, int aOff, float[] b, int bOff, int n) {
    int bound = F.loopBound(n);
    int i = 0;
    float s = 0f;
    if (bound > 0) {
      FloatVector acc = FloatVector.zero(F);
      for (; i < bound; i += LANES) {
        acc = FloatVector.fromArray(F, a, aOff + i).fma(FloatVector.fromArray(F, b, bOff + i), acc);
      }
      s = sum(acc);
    }
    for (; i < n; i++) {
      s = Math.fma(a[aOff + i], b[bOff + i], s);
    }
    return s;
  }

  /**
   * {@link #dot} of {@code a} with four rows of {@code b} (at {@code b0..b3}), bit for bit, into
   * {@code out[outOff..outOff + 3]}: the four lane trees share their two widest folds (one vector
   * holds two accumulators' surviving lanes), which costs fewer shuffles than four trees.
   */
  public static void dot4(
      float[] a,
      int aOff,
      float[] b,
      int b0,
      int b1,
      int b2,
      int b3,
      int n,
      float[] out,
      int outOff) {
    int bound = F.loopBound(n);
    if (LANES < 4 || bound == 0) {
      out[outOff] = dot(a, aOff, b, b0, n);
      out[outOff + 1] = dot(a, aOff, b, b1, n);
      out[outOff + 2] = dot(a, aOff, b, b2, n);
      out[outOff + 3] = dot(a, aOff, b, b3, n);
      return;
    }
    FloatVector s0 = FloatVector.zero(F);
    FloatVector s1 = s0;
    FloatVector s2 = s0;
    FloatVector s3 = s0;
    int i = 0;
    for (; i < bound; i += LANES) {
      FloatVector av = FloatVector.fromArray(F, a, aOff + i);
      s0 = av.fma(FloatVector.fromArray(F, b, b0 + i), s0);
      s1 = av.fma(FloatVector.fromArray(F, b, b1 + i), s1);
      s2 = av.fma(FloatVector.fromArray(F, b, b2 + i), s2);
      s3 = av.fma(FloatVector.fromArray(F, b, b3 + i), s3);
    }
    FloatVector v =
        fold2(
            fold2(s0, s1, FOLD_H1, UPPER_H1), fold2(s2, s3, FOLD_H1, UPPER_H1), FOLD_H2, UPPER_H2);
    if (LANES >= 16) {
      v = v.add(v.rearrange(FOLD_2));
    }
    if (LANES >= 8) {
      v = v.add(v.rearrange(FOLD_1));
    }
    float r0 = v.lane(0);
    float r1 = v.lane(H1);
    float r2 = v.lane(H2);
    float r3 = v.lane(H1 + H2);
    for (; i < n; i++) {
      float ai = a[aOff + i];
      r0 = Math.fma(ai, b[b0 + i], r0);
      r1 = Math.fma(ai, b[b1 + i], r1);
      r2 = Math.fma(ai, b[b2 + i], r2);
      r3 = Math.fma(ai, b[b3 + i], r3);
    }
    out[outOff] = r0;
    out[outOff + 1] = r1;
    out[outOff + 2] = r2;
    out[outOff + 3] = r3;
  }

  /**
   * {@code y[yOff + i] += sum_j w[j] * x[xOffs[j] + i]} for {@code i < n}, as {@link #axpy} of each
   * {@code j < count} in turn would compute it, bit for bit (the same fused multiply-adds in the
   * same order per element), with {@code y} kept in registers across the rows.
   */
  public static void axpyRows(
      float[] w, float[] x, int[] xOffs, int count, float[] y, int yOff, int n) {
    axpyRows(w, 0, x, xOffs, count, y, yOff, n);
  }

  /** {@link #axpyRows} with the weights at {@code w[wOff..wOff + count - 1]}. */
  public static void axpyRows(
      float[] w, int wOff, float[] x, int[] xOffs, int count, float[] y, int yOff, int n) {
    int bound = F.loopBound(n);
    int i = 0;
    // Four output vectors per pass: four independent chains instead of one chain of count
    // dependent fused multiply-adds; each lane still adds the rows in order.
    for (; i + 4 * LANES <= bound; i += 4 * LANES) {
      FloatVector a0 = FloatVector.fromArray(F, y, yOff + i);
      FloatVector a1 = FloatVector.fromArray(F, y, yOff + i + LANES);
      FloatVector a2 = FloatVector.fromArray(F, y, yOff + i + 2 * LANES);
      FloatVector a3 = FloatVector.fromArray(F, y, yOff + i + 3 * LANES);
      for (int j = 0; j < count; j++) {
        FloatVector wv = FloatVector.broadcast(F, w[wOff + j]);
        int xo = xOffs[j] + i;
        a0 = FloatVector.fromArray(F, x, xo).fma(wv, a0);
        a1 = FloatVector.fromArray(F, x, xo + LANES).fma(wv, a1);
        a2 = FloatVector.fromArray(F, x, xo + 2 * LANES).fma(wv, a2);
        a3 = FloatVector.fromArray(F, x, xo + 3 * LANES).fma(wv, a3);
      }
      a0.intoArray(y, yOff + i);
      a1.intoArray(y, yOff + i + LANES);
      a2.intoArray(y, yOff + i + 2 * LANES);
      a3.intoArray(y, yOff + i + 3 * LANES);
    }
    for (; i < bound; i += LANES) {
      FloatVector acc = FloatVector.fromArray(F, y, yOff + i);
      for (int j = 0; j < count; j++) {
        acc =
            FloatVector.fromArray(F, x, xOffs[j] + i)
                .fma(FloatVector.broadcast(F, w[wOff + j]), acc);
      }
      acc.intoArray(y, yOff + i);
    }
    for (; i < n; i++) {
      float acc = y[yOff + i];
      for (int j = 0; j < count; j++) {
        acc = Math.fma(x[xOffs[j] + i], w[wOff + j], acc);
      }
      y[yOff + i] = acc;
    }
  }

  /**
   * {@code y[yOff + i] += x[xOff + i] * a} for {@code i < n}, the product rounded before the sum (a
   * multiply, then an add: the bits of the scalar statement, unlike {@link #axpy}).
   */
  public static void addScaled(float a, float[] x, int xOff, float[] y, int yOff, int n) {
    int bound = F.loopBound(n);
    int i = 0;
    if (bound > 0) {
      FloatVector av = FloatVector.broadcast(F, a);
      for (; i < bound; i += LANES) {
        FloatVector.fromArray(F, x, xOff + i)
            .mul(av)
            .add(FloatVector.fromArray(F, y, yOff + i))
            .intoArray(y, yOff + i);
      }
    }
    for (; i < n; i++) {
      y[yOff + i] += x[xOff + i] * a;
    }
  }

  /** {@code y[yOff + i] += a * x[xOff + i]} for {@code i < n}, each as one fused multiply-add. */
  public static void axpy(float a, float[] x, int xOff, float[] y, int yOff, int n) {
    int bound = F.loopBound(n);
    int i = 0;
    if (bound > 0) {
      FloatVector av = FloatVector.broadcast(F, a);
      for (; i < bound; i += LANES) {
        FloatVector.fromArray(F, x, xOff + i)
            .fma(av, FloatVector.fromArray(F, y, yOff + i))
            .intoArray(y, yOff + i);
      }
    }
    for (; i < n; i++) {
      y[yOff + i] = Math.fma(x[xOff + i], a, y[yOff + i]);
    }
  }

  /** The lanes of {@code v} summed pairwise: lane {@code i} plus lane {@code i ^ half}, halving. */
  private static float sum(FloatVector v) {
    if (LANES >= 16) {
      v = v.add(v.rearrange(FOLD_8));
    }
    if (LANES >= 8) {
      v = v.add(v.rearrange(FOLD_4));
    }
    if (LANES >= 4) {
      v = v.add(v.rearrange(FOLD_2));
    }
    if (LANES >= 2) {
      v = v.add(v.rearrange(FOLD_1));
    }
    return v.lane(0);
  }

  /**
   * One fold of {@link #sum} for two vectors: lane {@code i} gets {@code a[i] + a[i ^ half]} where
   * bit {@code half} of {@code i} is clear and {@code b[i ^ half] + b[i]} where it is set, the
   * operands and order that fold gives each vector's surviving lanes.
   */
  private static FloatVector fold2(
      FloatVector a, FloatVector b, VectorShuffle<Float> fold, VectorMask<Float> upper) {
    FloatVector low = a.blend(b.rearrange(fold), upper);
    FloatVector high = a.rearrange(fold).blend(b, upper);
    return low.add(high);
  }

  /** The lanes whose index has bit {@code half} set; null where {@code half} is 0. */
  private static VectorMask<Float> upper(int half) {
    if (half == 0) {
      return null;
    }
    boolean[] bits = new boolean[LANES];
    for (int i = 0; i < LANES; i++) {
      bits[i] = (i & half) != 0;
    }
    return VectorMask.fromArray(F, bits, 0);
  }

  private static VectorShuffle<Float> fold(int half) {
    return half < LANES ? VectorShuffle.fromOp(F, i -> i ^ half) : null;
  }
}
