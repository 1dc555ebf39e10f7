package dev.ringmaster.backend.cpu;

import dev.ringmaster.backend.DType;
import dev.ringmaster.backend.quant.Fp8E4m3;
import java.lang.constant.ConstantDescs;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.nio.ByteOrder;
import java.util.Arrays;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;

/**
 * The matmul kernel for FP8 weights (e4m3 codes with 128x128 block scales or one tensor scale),
 * specialised per vector width as {@link RowKernelTemplate} is (a hidden copy per {@link
 * KernelSpec}, see there why), and decoding the codes in registers: no f32 copy of the weights.
 *
 * <p>Every (row, token) result has the bits of {@link RowKernelTemplate#rows} on the rows {@link
 * Dequantizer} decodes: each weight is decoded to its exact e4m3 value and multiplied by its scale
 * (one f32 multiply, as the dequantizer does), then accumulated in the same order (lane {@code l}
 * of one vector accumulator sums columns {@code l, l + LANES, ...} by fused multiply-adds, the
 * lanes are summed by the same tree, the column tail is added last, one by one). Scale blocks are
 * 128 columns, a multiple of the lanes, so no vector straddles two scales.
 *
 * <p>Tiles as in {@link RowKernelTemplate}: 4 rows x 1 token, 2 rows x 4 tokens (each decoded
 * weight vector feeds 4 tokens), the one-token tile for the last token of a 4k + 1 batch; short
 * tiles repeat their last row or token.
 */
final class Fp8RowKernelTemplate implements QuantizedRowKernel {
  private static final KernelSpec SPEC = spec();
  private static final VectorSpecies<Float> F =
      VectorSpecies.of(float.class, VectorShape.forBitSize(SPEC.vectorBits()));
  private static final VectorSpecies<Integer> I = VectorSpecies.of(int.class, F.vectorShape());
  private static final int LANES = F.length();
  // 8 or 16 codes widen from a byte vector; 128-bit vectors (4 lanes) have no 32-bit byte vector
  // and spread one int of 4 codes over the lanes by shifts instead.
  private static final VectorSpecies<Byte> B =
      LANES >= 8
          ? VectorSpecies.of(byte.class, VectorShape.forBitSize(SPEC.vectorBits() / 4))
          : null;
  private static final IntVector BYTE_SHIFTS =
      LANES == 4 ? IntVector.fromArray(I, new int[] {24, 16, 8, 0}, 0) : null;
  private static final int BLOCK = Quantization.FP8_BLOCK;
  private static final float[] FP8 = Fp8E4m3.table();
  private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
  private static final ValueLayout.OfInt I32_LE = ValueLayout.JAVA_INT_UNALIGNED.withOrder(LE);
  private static final int H1 = LANES / 2;
  private static final int H2 = LANES / 4;
  private static final VectorShuffle<Float> FOLD_H1 = fold(H1);
  private static final VectorShuffle<Float> FOLD_H2 = fold(H2);
  private static final VectorShuffle<Float> FOLD_2 = fold(2);
  private static final VectorShuffle<Float> FOLD_1 = fold(1);
  private static final VectorMask<Float> UPPER_H1 = upper(H1);
  private static final VectorMask<Float> UPPER_H2 = upper(H2);

  /** Bytes of reused rows (weights, or token inputs) to keep in cache while tiling. */
  private static final long BLOCK_BYTES = 128 * 1024;

  Fp8RowKernelTemplate() {}

  private static KernelSpec spec() {
    try {
      KernelSpec spec =
          MethodHandles.classData(
              MethodHandles.lookup(), ConstantDescs.DEFAULT_NAME, KernelSpec.class);
      // Only hidden copies carry class data; the plain class is never run but must initialise.
      return spec != null ? spec : new KernelSpec(128, DType.F8_E4M3);
    } catch (IllegalAccessException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  @Override
  public void decodeRow(CpuMatrix w, int r, float[] dst, int dstOffset) {
    int cols = w.cols();
    float[] scales = scales(w, r, r + 1);
    long base = (long) r * cols;
    int bound = F.loopBound(cols);
    for (int c = 0; c < bound; c += LANES) {
      decode(w.data(), base + c).mul(scales[c / BLOCK]).intoArray(dst, dstOffset + c);
    }
    for (int c = bound; c < cols; c++) {
      dst[dstOffset + c] = weight(w.data(), base + c, scales[c / BLOCK]);
    }
  }

  @Override
  public void rows(
      CpuMatrix w, int r0, int r1, float[] x, int[] xOffsets, float[] out, int[] outOffsets) {
    if (r1 <= r0 || xOffsets.length == 0) {
      return;
    }
    int cols = w.cols();
    float[] scales = scales(w, r0, r1);
    // Row r's scales start at (r / BLOCK - b0) * stride.
    int b0 = r0 / BLOCK;
    int stride = w.quant() instanceof Quantization.Fp8Block ? (cols + BLOCK - 1) / BLOCK : 0;
    MemorySegment data = w.data();
    int n = xOffsets.length;
    float[] sums = new float[LANES];
    // A lone last token (n = 4k + 1: one token, or a 5-token verify pass) takes the one-token
    // tile rather than a 4-token tile that repeats it; the sums are the same either way.
    int quads = n % 4 == 1 ? n - 1 : n;
    if (quads > 0) {
      int groupRows = (int) Math.max(2, Math.min(r1 - r0, BLOCK_BYTES / cols) & ~1);
      int blockTokens = (int) Math.max(4, (BLOCK_BYTES / (cols * 4L)) & ~3);
      for (int g = r0; g < r1; g += groupRows) {
        int gLast = Math.min(g + groupRows, r1) - 1;
        for (int t0 = 0; t0 < quads; t0 += blockTokens) {
          int tLast = Math.min(t0 + blockTokens, quads) - 1;
          for (int r = g; r <= gLast; r += 2) {
            int rb = Math.min(r + 1, gLast);
            for (int t = t0; t <= tLast; t += 4) {
              int tb = Math.min(t + 1, tLast);
              int tc = Math.min(t + 2, tLast);
              int td = Math.min(t + 3, tLast);
              tile2x4(
                  data,
                  cols,
                  scales,
                  (r / BLOCK - b0) * stride,
                  (rb / BLOCK - b0) * stride,
                  r,
                  rb,
                  x,
                  xOffsets[t],
                  xOffsets[tb],
                  xOffsets[tc],
                  xOffsets[td],
                  out,
                  outOffsets[t],
                  outOffsets[tb],
                  outOffsets[tc],
                  outOffsets[td],
                  sums);
            }
          }
        }
      }
    }
    if (quads < n) {
      int last = r1 - 1;
      for (int r = r0; r < r1; r += 4) {
        int rb = Math.min(r + 1, last);
        int rc = Math.min(r + 2, last);
        int rd = Math.min(r + 3, last);
        tile4x1(
            data,
            cols,
            scales,
            (r / BLOCK - b0) * stride,
            (rb / BLOCK - b0) * stride,
            (rc / BLOCK - b0) * stride,
            (rd / BLOCK - b0) * stride,
            r,
            rb,
            rc,
            rd,
            x,
            xOffsets[n - 1],
            out,
            outOffsets[n - 1],
            sums);
      }
    }
  }

  /**
   * The scales of the row blocks that rows {@code r0..r1} touch, {@code [block - r0 / BLOCK][column
   * block]}; a tensor scale gives one row of them, repeated.
   */
  private static float[] scales(CpuMatrix w, int r0, int r1) {
    int blockCols = (w.cols() + BLOCK - 1) / BLOCK;
    switch (w.quant()) {
      case Quantization.Fp8Block b -> {
        int b0 = r0 / BLOCK;
        float[] scales = new float[((r1 - 1) / BLOCK - b0 + 1) * blockCols];
        MemorySegment.copy(
            b.scales(), Numerics.F32_LE, (long) b0 * blockCols * 4, scales, 0, scales.length);
        return scales;
      }
      case Quantization.Fp8Tensor t -> {
        float[] scales = new float[blockCols];
        Arrays.fill(scales, t.scale());
        return scales;
      }
      case null, default -> throw new IllegalArgumentException("not an FP8 matrix: " + w);
    }
  }

  /** Rows ra..rd times one token; {@code sa..sd} index each row's scales in {@code scales}. */
  private static void tile4x1(
      MemorySegment w,
      int cols,
      float[] scales,
      int sa,
      int sb,
      int sc,
      int sd,
      int ra,
      int rb,
      int rc,
      int rd,
      float[] x,
      int xo,
      float[] out,
      int oo,
      float[] sums) {
    long wa = (long) ra * cols;
    long wb = (long) rb * cols;
    long wc = (long) rc * cols;
    long wd = (long) rd * cols;
    FloatVector aa = FloatVector.zero(F);
    FloatVector ab = aa;
    FloatVector ac = aa;
    FloatVector ad = aa;
    int bound = F.loopBound(cols);
    for (int c0 = 0, cb = 0; c0 < bound; c0 += BLOCK, cb++) {
      FloatVector qa = FloatVector.broadcast(F, scales[sa + cb]);
      FloatVector qb = FloatVector.broadcast(F, scales[sb + cb]);
      FloatVector qc = FloatVector.broadcast(F, scales[sc + cb]);
      FloatVector qd = FloatVector.broadcast(F, scales[sd + cb]);
      int c1 = Math.min(bound, c0 + BLOCK);
      for (int c = c0; c < c1; c += LANES) {
        FloatVector xv = FloatVector.fromArray(F, x, xo + c);
        aa = decode(w, wa + c).mul(qa).fma(xv, aa);
        ab = decode(w, wb + c).mul(qb).fma(xv, ab);
        ac = decode(w, wc + c).mul(qc).fma(xv, ac);
        ad = decode(w, wd + c).mul(qd).fma(xv, ad);
      }
    }
    reduce4(aa, ab, ac, ad).intoArray(sums, 0);
    float a = sums[0];
    float b = sums[H1];
    float c = sums[H2];
    float d = sums[H1 + H2];
    for (int k = bound; k < cols; k++) {
      float xk = x[xo + k];
      int cb = k / BLOCK;
      a = Math.fma(weight(w, wa + k, scales[sa + cb]), xk, a);
      b = Math.fma(weight(w, wb + k, scales[sb + cb]), xk, b);
      c = Math.fma(weight(w, wc + k, scales[sc + cb]), xk, c);
      d = Math.fma(weight(w, wd + k, scales[sd + cb]), xk, d);
    }
    out[oo + ra] = a;
    out[oo + rb] = b;
    out[oo + rc] = c;
    out[oo + rd] = d;
  }

  /** Rows ra, rb times tokens a..d; {@code sa}, {@code sb} index each row's scales. */
  private static void tile2x4(
      MemorySegment w,
      int cols,
      float[] scales,
      int sa,
      int sb,
      int ra,
      int rb,
      float[] x,
      int xa,
      int xb,
      int xc,
      int xd,
      float[] out,
      int oa,
      int ob,
      int oc,
      int od,
      float[] sums) {
    long wa = (long) ra * cols;
    long wb = (long) rb * cols;
    FloatVector aa = FloatVector.zero(F);
    FloatVector ab = aa;
    FloatVector ac = aa;
    FloatVector ad = aa;
    FloatVector ba = aa;
    FloatVector bb = aa;
    FloatVector bc = aa;
    FloatVector bd = aa;
    int bound = F.loopBound(cols);
    for (int c0 = 0, cb = 0; c0 < bound; c0 += BLOCK, cb++) {
      FloatVector qa = FloatVector.broadcast(F, scales[sa + cb]);
      FloatVector qb = FloatVector.broadcast(F, scales[sb + cb]);
      int c1 = Math.min(bound, c0 + BLOCK);
      for (int c = c0; c < c1; c += LANES) {
        FloatVector va = decode(w, wa + c).mul(qa);
        FloatVector vb = decode(w, wb + c).mul(qb);
        FloatVector x0 = FloatVector.fromArray(F, x, xa + c);
        aa = va.fma(x0, aa);
        ba = vb.fma(x0, ba);
        FloatVector x1 = FloatVector.fromArray(F, x, xb + c);
        ab = va.fma(x1, ab);
        bb = vb.fma(x1, bb);
        FloatVector x2 = FloatVector.fromArray(F, x, xc + c);
        ac = va.fma(x2, ac);
        bc = vb.fma(x2, bc);
        FloatVector x3 = FloatVector.fromArray(F, x, xd + c);
        ad = va.fma(x3, ad);
        bd = vb.fma(x3, bd);
      }
    }
    reduce4(aa, ab, ac, ad).intoArray(sums, 0);
    float saa = sums[0];
    float sab = sums[H1];
    float sac = sums[H2];
    float sad = sums[H1 + H2];
    reduce4(ba, bb, bc, bd).intoArray(sums, 0);
    float sba = sums[0];
    float sbb = sums[H1];
    float sbc = sums[H2];
    float sbd = sums[H1 + H2];
    for (int k = bound; k < cols; k++) {
      int cb = k / BLOCK;
      float wva = weight(w, wa + k, scales[sa + cb]);
      float wvb = weight(w, wb + k, scales[sb + cb]);
      saa = Math.fma(wva, x[xa + k], saa);
      sba = Math.fma(wvb, x[xa + k], sba);
      sab = Math.fma(wva, x[xb + k], sab);
      sbb = Math.fma(wvb, x[xb + k], sbb);
      sac = Math.fma(wva, x[xc + k], sac);
      sbc = Math.fma(wvb, x[xc + k], sbc);
      sad = Math.fma(wva, x[xd + k], sad);
      sbd = Math.fma(wvb, x[xd + k], sbd);
    }
    out[oa + ra] = saa;
    out[oa + rb] = sba;
    out[ob + ra] = sab;
    out[ob + rb] = sbb;
    out[oc + ra] = sac;
    out[oc + rb] = sbc;
    out[od + ra] = sad;
    out[od + rb] = sbd;
  }

  /**
   * The {@code LANES} codes from byte {@code off} as their exact e4m3 values ({@link
   * Fp8E4m3#table()}, NaN codes included), with no f32 subnormal along the way: arithmetic on
   * subnormal floats takes microcode assists on many x86 cores, and the 2^120 rescaling of a
   * reinterpreted code would make one of every e4m3 subnormal (codes with exponent 0).
   *
   * <p>Each code's 7 magnitude bits go to f32 bits 20..26 and the exponent is rebased by 120: the
   * exact value of every normal code, {@code 2^(E-7) (1 + m/8)}. For exponent 0 that reads {@code
   * 2^-7 (1 + m/8)}; the code's value {@code m 2^-9} is twice that less {@code 2^-6}, exactly, and
   * the smaller of the two, while for a normal code the first reading is the smaller. Both are
   * non-negative floats, so the smaller is the smaller int.
   */
  private static FloatVector decode(MemorySegment w, long off) {
    // Code bits 0..7 at bits 20..27, the sign bit copied into 28..31.
    IntVector t;
    if (LANES == 4) {
      t =
          IntVector.broadcast(I, w.get(I32_LE, off))
              .lanewise(VectorOperators.LSHL, BYTE_SHIFTS)
              .lanewise(VectorOperators.ASHR, 4);
    } else {
      t =
          ((IntVector)
                  ByteVector.fromMemorySegment(B, w, off, LE)
                      .convertShape(VectorOperators.B2I, I, 0))
              .lanewise(VectorOperators.LSHL, 20);
    }
    IntVector magnitude = t.and(0x07f00000);
    IntVector normal = magnitude.add(0x3c000000);
    IntVector twice = normal.reinterpretAsFloats().fma(2f, -0x1p-6f).reinterpretAsInts();
    IntVector value =
        normal
            .min(twice)
            .blend(
                Float.floatToRawIntBits(Float.NaN),
                magnitude.compare(VectorOperators.EQ, 0x07f00000));
    return value.or(t.and(0x80000000)).reinterpretAsFloats();
  }

  /** One weight as {@link Dequantizer} decodes it: the code's value times its scale. */
  private static float weight(MemorySegment w, long off, float scale) {
    return FP8[w.get(ValueLayout.JAVA_BYTE, off) & 0xff] * scale;
  }

  /**
   * The lane sums of four accumulators, by the tree and in the lanes of {@link RowKernelTemplate}'s
   * {@code reduce4} (which says why this order): lanes 0 ({@code a}), {@code H1} ({@code b}),
   * {@code H2} ({@code c}) and {@code H1 + H2} ({@code d}).
   */
  private static FloatVector reduce4(FloatVector a, FloatVector b, FloatVector c, FloatVector d) {
    FloatVector v =
        fold2(fold2(a, b, FOLD_H1, UPPER_H1), fold2(c, d, FOLD_H1, UPPER_H1), FOLD_H2, UPPER_H2);
    if (LANES >= 16) {
      v = v.add(v.rearrange(FOLD_2));
    }
    if (LANES >= 8) {
      v = v.add(v.rearrange(FOLD_1));
    }
    return v;
  }

  /** One fold of the lane tree for two vectors, as {@link RowKernelTemplate}'s {@code fold2}. */
  private static FloatVector fold2(
      FloatVector a, FloatVector b, VectorShuffle<Float> fold, VectorMask<Float> upper) {
    FloatVector low = a.blend(b.rearrange(fold), upper);
    FloatVector high = a.rearrange(fold).blend(b, upper);
    return low.add(high);
  }

  /** The lanes whose index has bit {@code half} set. */
  private static VectorMask<Float> upper(int half) {
    boolean[] bits = new boolean[LANES];
    for (int i = 0; i < LANES; i++) {
      bits[i] = (i & half) != 0;
    }
    return VectorMask.fromArray(F, bits, 0);
  }

  /** The shuffle pairing lane {@code i} with lane {@code i ^ half}; null where too wide. */
  private static VectorShuffle<Float> fold(int half) {
    return half < LANES ? VectorShuffle.fromOp(F, i -> i ^ half) : null;
  }
}
