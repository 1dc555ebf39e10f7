package dev.ringmaster.backend.cpu;

import dev.ringmaster.backend.DType;
import dev.ringmaster.backend.quant.E2m1;
import dev.ringmaster.backend.quant.Fp8E4m3;
import java.lang.constant.ConstantDescs;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.nio.ByteOrder;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;

/**
 * The matmul kernel for NVFP4 weights (e2m1 codes, two a byte, one e4m3 scale per 16 columns and a
 * global scale), specialised per vector width as {@link RowKernelTemplate} is (a hidden copy per
 * {@link KernelSpec}, see there why), and decoding the codes in registers: no f32 copy of the
 * weights.
 *
 * <p>Every (row, token) result has the bits of {@link RowKernelTemplate#rows} on the rows {@link
 * Dequantizer} decodes: each weight is the exact e2m1 value times its group's scale, the scale
 * product {@code e4m3(scale) * globalScale} taken first (two f32 multiplies, as the dequantizer
 * does), then accumulated in the same order (lane {@code l} of one vector accumulator sums columns
 * {@code l, l + LANES, ...} by fused multiply-adds, the lanes are summed by the same tree). Rows
 * are a multiple of 16 columns and vectors at most 16 lanes, so there is no column tail and no
 * vector straddles two groups.
 *
 * <p>Tiles as in {@link RowKernelTemplate}: 4 rows x 1 token, 2 rows x 4 tokens (each decoded
 * weight vector feeds 4 tokens), the one-token tile for the last token of a 4k + 1 batch; short
 * tiles repeat their last row or token. A group's 8 code bytes come in one vector load and its
 * scale from an f32 array filled before the tile: scalar segment reads inside the tiles' loops
 * compiled to code several times slower.
 */
final class Nvfp4RowKernelTemplate implements QuantizedRowKernel {
  private static final KernelSpec SPEC = spec();
  private static final VectorSpecies<Float> F =
      VectorSpecies.of(float.class, VectorShape.forBitSize(SPEC.vectorBits()));
  private static final VectorSpecies<Integer> I = VectorSpecies.of(int.class, F.vectorShape());
  private static final VectorSpecies<Byte> B = ByteVector.SPECIES_64;
  private static final int LANES = F.length();
  private static final int GROUP = Quantization.NVFP4_GROUP;
  private static final float[] FP8 = Fp8E4m3.table();
  private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
  // Lane l takes byte l / 2 of the widened bytes (EVEN), or of their upper half (ODD) ...
  private static final VectorShuffle<Integer> EVEN = VectorShuffle.fromOp(I, l -> l / 2);
  private static final VectorShuffle<Integer> ODD =
      VectorShuffle.fromOp(I, l -> Math.min(LANES - 1, LANES / 2 + l / 2));
  // ... and shifts its low (even lane) or high (odd lane) nibble down.
  private static final IntVector NIBBLE_SHIFTS = IntVector.fromArray(I, nibbleShifts(), 0);
  // 16 lanes: the f32 bits of all 16 codes. Fewer: the bits of the 8 magnitudes, with the
  // magnitude's own bits at 28..30 flipped (undone by the xor with the code, see decode).
  private static final IntVector CODES = LANES == 16 ? table(0, false) : null;
  private static final IntVector MAGNITUDES = LANES == 8 ? table(0, true) : null;
  private static final IntVector MAGNITUDES_LOW = LANES == 4 ? table(0, true) : null;
  private static final IntVector MAGNITUDES_HIGH = LANES == 4 ? table(4, true) : null;
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

  Nvfp4RowKernelTemplate() {}

  private static KernelSpec spec() {
    try {
      KernelSpec spec =
          MethodHandles.classData(
              MethodHandles.lookup(), ConstantDescs.DEFAULT_NAME, KernelSpec.class);
      // Only hidden copies carry class data; the plain class is never run but must initialise.
      return spec != null ? spec : new KernelSpec(128, DType.U8);
    } catch (IllegalAccessException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  @Override
  public void decodeRow(CpuMatrix w, int r, float[] dst, int dstOffset) {
    Quantization.Nvfp4 q = nvfp4(w);
    int groups = w.cols() / GROUP;
    float[] scales = new float[groups];
    groupScales(q, scaleOf(q), groups, r, 1, scales);
    long base = (long) r * (w.cols() / 2);
    for (int g = 0; g < groups; g++) {
      ByteVector codes = ByteVector.fromMemorySegment(B, w.data(), base + g * (GROUP / 2), LE);
      for (int k = 0; k < GROUP / LANES; k++) {
        decode(codes, k).mul(scales[g]).intoArray(dst, dstOffset + g * GROUP + k * LANES);
      }
    }
  }

  @Override
  public void rows(
      CpuMatrix w, int r0, int r1, float[] x, int[] xOffsets, float[] out, int[] outOffsets) {
    if (r1 <= r0 || xOffsets.length == 0) {
      return;
    }
    Quantization.Nvfp4 q = nvfp4(w);
    float[] scaleOf = scaleOf(q);
    MemorySegment data = w.data();
    int cols = w.cols();
    int groups = cols / GROUP;
    int n = xOffsets.length;
    float[] sums = new float[LANES];
    // A lone last token (n = 4k + 1: one token, or a 5-token verify pass) takes the one-token
    // tile rather than a 4-token tile that repeats it; the sums are the same either way.
    int quads = n % 4 == 1 ? n - 1 : n;
    if (quads > 0) {
      int groupRows = (int) Math.max(2, Math.min(r1 - r0, BLOCK_BYTES / (cols / 2)) & ~1);
      int blockTokens = (int) Math.max(4, (BLOCK_BYTES / (cols * 4L)) & ~3);
      float[] scales = new float[groupRows * groups];
      for (int g = r0; g < r1; g += groupRows) {
        int gLast = Math.min(g + groupRows, r1) - 1;
        groupScales(q, scaleOf, groups, g, gLast - g + 1, scales);
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
                  scales,
                  (r - g) * groups,
                  (rb - g) * groups,
                  cols,
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
      float[] scales = new float[4 * groups];
      for (int r = r0; r < r1; r += 4) {
        groupScales(q, scaleOf, groups, r, Math.min(4, r1 - r), scales);
        int rb = Math.min(r + 1, last);
        int rc = Math.min(r + 2, last);
        int rd = Math.min(r + 3, last);
        tile4x1(
            data,
            scales,
            (rb - r) * groups,
            (rc - r) * groups,
            (rd - r) * groups,
            cols,
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

  private static Quantization.Nvfp4 nvfp4(CpuMatrix w) {
    if (w.quant() instanceof Quantization.Nvfp4 q) {
      return q;
    }
    throw new IllegalArgumentException("not an NVFP4 matrix: " + w);
  }

  /** The scale of each e4m3 scale code, as the dequantizer takes it. */
  private static float[] scaleOf(Quantization.Nvfp4 q) {
    float[] scaleOf = new float[256];
    for (int i = 0; i < 256; i++) {
      scaleOf[i] = FP8[i] * q.globalScale();
    }
    return scaleOf;
  }

  /** The group scales of rows {@code r..r + count - 1} into {@code dst}, {@code groups} a row. */
  private static void groupScales(
      Quantization.Nvfp4 q, float[] scaleOf, int groups, int r, int count, float[] dst) {
    MemorySegment codes = q.scales();
    long base = (long) r * groups;
    for (int i = 0; i < count * groups; i++) {
      dst[i] = scaleOf[codes.get(ValueLayout.JAVA_BYTE, base + i) & 0xff];
    }
  }

  /**
   * Rows ra..rd times one token; row ra's group scales start at 0 in {@code scales}, the others' at
   * {@code sb..sd}.
   */
  private static void tile4x1(
      MemorySegment w,
      float[] scales,
      int sb,
      int sc,
      int sd,
      int cols,
      int ra,
      int rb,
      int rc,
      int rd,
      float[] x,
      int xo,
      float[] out,
      int oo,
      float[] sums) {
    int groups = cols / GROUP;
    long rowBytes = cols / 2;
    long wa = ra * rowBytes;
    long wb = rb * rowBytes;
    long wc = rc * rowBytes;
    long wd = rd * rowBytes;
    FloatVector aa = FloatVector.zero(F);
    FloatVector ab = aa;
    FloatVector ac = aa;
    FloatVector ad = aa;
    for (int g = 0; g < groups; g++) {
      FloatVector qa = FloatVector.broadcast(F, scales[g]);
      FloatVector qb = FloatVector.broadcast(F, scales[sb + g]);
      FloatVector qc = FloatVector.broadcast(F, scales[sc + g]);
      FloatVector qd = FloatVector.broadcast(F, scales[sd + g]);
      long off = (long) g * (GROUP / 2);
      ByteVector pa = ByteVector.fromMemorySegment(B, w, wa + off, LE);
      ByteVector pb = ByteVector.fromMemorySegment(B, w, wb + off, LE);
      ByteVector pc = ByteVector.fromMemorySegment(B, w, wc + off, LE);
      ByteVector pd = ByteVector.fromMemorySegment(B, w, wd + off, LE);
      for (int k = 0; k < GROUP / LANES; k++) {
        FloatVector xv = FloatVector.fromArray(F, x, xo + g * GROUP + k * LANES);
        aa = decode(pa, k).mul(qa).fma(xv, aa);
        ab = decode(pb, k).mul(qb).fma(xv, ab);
        ac = decode(pc, k).mul(qc).fma(xv, ac);
        ad = decode(pd, k).mul(qd).fma(xv, ad);
      }
    }
    reduce4(aa, ab, ac, ad).intoArray(sums, 0);
    out[oo + ra] = sums[0];
    out[oo + rb] = sums[H1];
    out[oo + rc] = sums[H2];
    out[oo + rd] = sums[H1 + H2];
  }

  /** Rows ra, rb times tokens a..d; their group scales start at {@code sa}, {@code sb}. */
  private static void tile2x4(
      MemorySegment w,
      float[] scales,
      int sa,
      int sb,
      int cols,
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
    int groups = cols / GROUP;
    long rowBytes = cols / 2;
    long wa = ra * rowBytes;
    long wb = rb * rowBytes;
    FloatVector aa = FloatVector.zero(F);
    FloatVector ab = aa;
    FloatVector ac = aa;
    FloatVector ad = aa;
    FloatVector ba = aa;
    FloatVector bb = aa;
    FloatVector bc = aa;
    FloatVector bd = aa;
    for (int g = 0; g < groups; g++) {
      FloatVector qa = FloatVector.broadcast(F, scales[sa + g]);
      FloatVector qb = FloatVector.broadcast(F, scales[sb + g]);
      long off = (long) g * (GROUP / 2);
      ByteVector pa = ByteVector.fromMemorySegment(B, w, wa + off, LE);
      ByteVector pb = ByteVector.fromMemorySegment(B, w, wb + off, LE);
      for (int k = 0; k < GROUP / LANES; k++) {
        int c = g * GROUP + k * LANES;
        FloatVector va = decode(pa, k).mul(qa);
        FloatVector vb = decode(pb, k).mul(qb);
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
    out[oa + ra] = sums[0];
    out[ob + ra] = sums[H1];
    out[oc + ra] = sums[H2];
    out[od + ra] = sums[H1 + H2];
    reduce4(ba, bb, bc, bd).intoArray(sums, 0);
    out[oa + rb] = sums[0];
    out[ob + rb] = sums[H1];
    out[oc + rb] = sums[H2];
    out[od + rb] = sums[H1 + H2];
  }

  /**
   * Codes {@code k * LANES} to {@code (k + 1) * LANES - 1} of a group's 16 (8 bytes, the low nibble
   * first) as their exact e2m1 values ({@link E2m1#table()}), looked up in registers. With up to 8
   * lanes the table holds the 8 magnitudes, each with its code's bits 0..2 xored in at bits 28..30,
   * and the code shifted to bits 28..31 xors them out again while setting the sign; 16 lanes look
   * up all 16 codes. (Reinterpreting the code's bits as an f32 and rescaling by 2^126 would make
   * 0.5 an f32 subnormal, slow on many x86 cores.)
   */
  private static FloatVector decode(ByteVector group, int k) {
    // 4 lanes take bytes 0..3 then 4..7; wider vectors widen all 8 at once.
    IntVector bytes =
        (IntVector) group.convertShape(VectorOperators.B2I, I, LANES == 4 ? k >> 1 : 0);
    // Code l in the low 4 bits of lane l; the lookups wrap the index to the table's size.
    IntVector code =
        bytes.rearrange((k & 1) == 0 ? EVEN : ODD).lanewise(VectorOperators.LSHR, NIBBLE_SHIFTS);
    if (LANES == 16) {
      return code.selectFrom(CODES).reinterpretAsFloats();
    }
    IntVector magnitude =
        LANES == 8 ? code.selectFrom(MAGNITUDES) : code.selectFrom(MAGNITUDES_LOW, MAGNITUDES_HIGH);
    return magnitude
        .lanewise(VectorOperators.XOR, code.lanewise(VectorOperators.LSHL, 28))
        .reinterpretAsFloats();
  }

  private static int[] nibbleShifts() {
    int[] s = new int[LANES];
    for (int l = 0; l < LANES; l++) {
      s[l] = 4 * (l % 2);
    }
    return s;
  }

  /**
   * {@code LANES} table entries from code {@code first}: the f32 bits of each code, or with {@code
   * flipped} the bits of its magnitude with the magnitude xored in at bits 28..30.
   */
  private static IntVector table(int first, boolean flipped) {
    float[] values = E2m1.table();
    int[] bits = new int[LANES];
    for (int l = 0; l < LANES; l++) {
      int code = first + l;
      bits[l] = Float.floatToRawIntBits(values[code]) ^ (flipped ? code << 28 : 0);
    }
    return IntVector.fromArray(I, bits, 0);
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
