package dev.ringmaster.backend.cpu;

import dev.ringmaster.backend.DType;
import java.lang.constant.ConstantDescs;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.nio.ByteOrder;
import java.util.Arrays;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;

/**
 * The matmul kernel source, written once and specialised per vector width and weight dtype.
 *
 * <p>The Vector API only compiles to SIMD instructions when the species is a JIT-time constant, and
 * a kernel shared by several widths or dtypes would see them as variables. So this class is never
 * used directly: {@link RowKernels} defines one hidden class per {@link KernelSpec} from these
 * bytes, and each copy reads its spec into {@code static final} fields, which the JIT folds. The
 * dtype branches in {@link #load} and {@link #scalar} then vanish from the compiled loops.
 *
 * <p>Tiles: for one token, 4 weight rows share each input vector (4 independent accumulators hide
 * the FMA latency; 2 rows for f16, whose decoding is longer); for several tokens, 2 weight rows
 * times 4 tokens (8 accumulators) share each decoded weight vector. Row groups and token blocks are
 * sized so the rows being reused stay in cache while each weight byte is read from memory once per
 * call. Short tiles repeat their last row or token and write the same value twice, so every (row,
 * token) result is computed by the same sequence of operations whatever the tiling: results do not
 * depend on batch size or threads.
 *
 * <p>Weights are read with unaligned vector loads straight from the segment: safetensors offsets
 * only guarantee element alignment (2 bytes for bf16).
 */
final class RowKernelTemplate implements RowKernel {
  private static final KernelSpec SPEC = spec();
  private static final VectorSpecies<Float> F =
      VectorSpecies.of(float.class, VectorShape.forBitSize(SPEC.vectorBits()));
  private static final VectorSpecies<Integer> I = VectorSpecies.of(int.class, F.vectorShape());
  private static final VectorSpecies<Short> S =
      VectorSpecies.of(short.class, VectorShape.forBitSize(SPEC.vectorBits() / 2));
  private static final int LANES = F.length();
  private static final boolean F32 = SPEC.dtype() == DType.F32;
  private static final boolean BF16 = SPEC.dtype() == DType.BF16;
  private static final boolean F16 = SPEC.dtype() == DType.F16;
  private static final long BYTES = SPEC.dtype().bytes();
  private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
  private static final ValueLayout.OfFloat F32_LE = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(LE);
  private static final ValueLayout.OfShort I16_LE = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(LE);
  private static final VectorShuffle<Float> FOLD_8 = fold(8);
  private static final VectorShuffle<Float> FOLD_4 = fold(4);
  private static final VectorShuffle<Float> FOLD_2 = fold(2);
  private static final VectorShuffle<Float> FOLD_1 = fold(1);
  // The two widest folds of sum(), done for four accumulators at once by reduce4().
  private static final int H1 = LANES / 2;
  private static final int H2 = LANES / 4;
  private static final VectorShuffle<Float> FOLD_H1 = fold(H1);
  private static final VectorShuffle<Float> FOLD_H2 = fold(H2);
  private static final VectorMask<Float> UPPER_H1 = upper(H1);
  private static final VectorMask<Float> UPPER_H2 = upper(H2);

  /** Bytes of reused rows (weights, or token inputs) to keep in cache while tiling. */
  private static final long BLOCK_BYTES = 128 * 1024;

  RowKernelTemplate() {}

  private static KernelSpec spec() {
    try {
      KernelSpec spec =
          MethodHandles.classData(
              MethodHandles.lookup(), ConstantDescs.DEFAULT_NAME, KernelSpec.class);
      // Only hidden copies carry class data; the plain class is never run but must initialise.
      return spec != null ? spec : new KernelSpec(128, DType.F32);
    } catch (IllegalAccessException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  @Override
  public int lanes() {
    return LANES;
  }

  @Override
  public void rows(
      MemorySegment w,
      int cols,
      int r0,
      int r1,
      float[] x,
      int[] xOffsets,
      float[] out,
      int[] outOffsets) {
    long rowBytes = cols * BYTES;
    int n = xOffsets.length;
    float[] sums = new float[LANES];
    if (n == 1 && !F16) {
      int last = r1 - 1;
      for (int r = r0; r < r1; r += 4) {
        tile4x1(
            w,
            rowBytes,
            cols,
            r,
            Math.min(r + 1, last),
            Math.min(r + 2, last),
            Math.min(r + 3, last),
            x,
            xOffsets[0],
            out,
            outOffsets[0],
            sums);
      }
      return;
    }
    if (n == 1) {
      // Four inlined f16 decodes exceed the JIT's inlining budget (a call left out of line boxes
      // every vector), so f16 pairs rows instead.
      int last = r1 - 1;
      for (int r = r0; r < r1; r += 2) {
        tile2x1(w, rowBytes, cols, r, Math.min(r + 1, last), x, xOffsets[0], out, outOffsets[0]);
      }
      return;
    }
    if (n % 4 == 1 && !F16) {
      // A lone last token would cost a whole 4-token tile (its slots repeat it): it takes the
      // one-token tile instead, which sums in the same order. A 5-token verify pass of
      // speculative decoding is this case.
      int[] lastX = {xOffsets[n - 1]};
      int[] lastOut = {outOffsets[n - 1]};
      rows(
          w,
          cols,
          r0,
          r1,
          x,
          Arrays.copyOf(xOffsets, n - 1),
          out,
          Arrays.copyOf(outOffsets, n - 1));
      rows(w, cols, r0, r1, x, lastX, out, lastOut);
      return;
    }
    int groupRows = (int) Math.max(2, Math.min(r1 - r0, BLOCK_BYTES / rowBytes) & ~1);
    int blockTokens = (int) Math.max(4, (BLOCK_BYTES / (cols * 4L)) & ~3);
    for (int g = r0; g < r1; g += groupRows) {
      int gLast = Math.min(g + groupRows, r1) - 1;
      for (int t0 = 0; t0 < n; t0 += blockTokens) {
        int tLast = Math.min(t0 + blockTokens, n) - 1;
        for (int r = g; r <= gLast; r += 2) {
          int rb = Math.min(r + 1, gLast);
          for (int t = t0; t <= tLast; t += 4) {
            int tb = Math.min(t + 1, tLast);
            int tc = Math.min(t + 2, tLast);
            int td = Math.min(t + 3, tLast);
            tile2x4(
                w,
                rowBytes,
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

  /** Rows ra..rd times one token. */
  private static void tile4x1(
      MemorySegment w,
      long rowBytes,
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
    long wa = ra * rowBytes;
    long wb = rb * rowBytes;
    long wc = rc * rowBytes;
    long wd = rd * rowBytes;
    FloatVector aa = FloatVector.zero(F);
    FloatVector ab = aa;
    FloatVector ac = aa;
    FloatVector ad = aa;
    int bound = F.loopBound(cols);
    int c = 0;
    for (; c < bound; c += LANES) {
      FloatVector xv = FloatVector.fromArray(F, x, xo + c);
      long off = c * BYTES;
      aa = load(w, wa + off).fma(xv, aa);
      ab = load(w, wb + off).fma(xv, ab);
      ac = load(w, wc + off).fma(xv, ac);
      ad = load(w, wd + off).fma(xv, ad);
    }
    reduce4(aa, ab, ac, ad).intoArray(sums, 0);
    float sa = sums[0];
    float sb = sums[H1];
    float sc = sums[H2];
    float sd = sums[H1 + H2];
    for (; c < cols; c++) {
      float xc = x[xo + c];
      long off = c * BYTES;
      sa = Math.fma(scalar(w, wa + off), xc, sa);
      sb = Math.fma(scalar(w, wb + off), xc, sb);
      sc = Math.fma(scalar(w, wc + off), xc, sc);
      sd = Math.fma(scalar(w, wd + off), xc, sd);
    }
    out[oo + ra] = sa;
    out[oo + rb] = sb;
    out[oo + rc] = sc;
    out[oo + rd] = sd;
  }

  /** Rows ra, rb times one token. */
  private static void tile2x1(
      MemorySegment w,
      long rowBytes,
      int cols,
      int ra,
      int rb,
      float[] x,
      int xo,
      float[] out,
      int oo) {
    long wa = ra * rowBytes;
    long wb = rb * rowBytes;
    FloatVector aa = FloatVector.zero(F);
    FloatVector ab = aa;
    int bound = F.loopBound(cols);
    int c = 0;
    for (; c < bound; c += LANES) {
      FloatVector xv = FloatVector.fromArray(F, x, xo + c);
      long off = c * BYTES;
      aa = load(w, wa + off).fma(xv, aa);
      ab = load(w, wb + off).fma(xv, ab);
    }
    float sa = sum(aa);
    float sb = sum(ab);
    for (; c < cols; c++) {
      float xc = x[xo + c];
      long off = c * BYTES;
      sa = Math.fma(scalar(w, wa + off), xc, sa);
      sb = Math.fma(scalar(w, wb + off), xc, sb);
    }
    out[oo + ra] = sa;
    out[oo + rb] = sb;
  }

  /** Rows ra, rb times tokens a..d. */
  private static void tile2x4(
      MemorySegment w,
      long rowBytes,
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
    int bound = F.loopBound(cols);
    int c = 0;
    for (; c < bound; c += LANES) {
      long off = c * BYTES;
      FloatVector va = load(w, wa + off);
      FloatVector vb = load(w, wb + off);
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
    // One row's four tokens per reduction, so the tail below sees each sum in a local.
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
    for (; c < cols; c++) {
      long off = c * BYTES;
      float wva = scalar(w, wa + off);
      float wvb = scalar(w, wb + off);
      saa = Math.fma(wva, x[xa + c], saa);
      sba = Math.fma(wvb, x[xa + c], sba);
      sab = Math.fma(wva, x[xb + c], sab);
      sbb = Math.fma(wvb, x[xb + c], sbb);
      sac = Math.fma(wva, x[xc + c], sac);
      sbc = Math.fma(wvb, x[xc + c], sbc);
      sad = Math.fma(wva, x[xd + c], sad);
      sbd = Math.fma(wvb, x[xd + c], sbd);
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

  @Override
  public void packedRows(
      MemorySegment packed,
      int rows,
      int cols,
      int r0,
      int r1,
      float[] x,
      int[] xOffsets,
      float[] out,
      int[] outOffsets) {
    if (r0 % LANES != 0 || (r1 % LANES != 0 && r1 != rows)) {
      throw new IllegalArgumentException(
          "packed rows "
              + r0
              + ".."
              + r1
              + " of "
              + rows
              + " must start on "
              + LANES
              + "-row blocks");
    }
    if (r1 <= r0) {
      return;
    }
    long blockBytes = (long) PackedBf16.pairs(cols) * LANES * 4;
    int b0 = r0 / LANES;
    int end = (r1 + LANES - 1) / LANES;
    int lastBlock = end - 1;
    int lastRows = r1 - lastBlock * LANES;
    int n = xOffsets.length;
    // A lone last token (n = 4k + 1: one token, or a 5-token verify pass) takes the one-token
    // tile rather than a 4-token tile that repeats it; the sums are the same either way.
    int quads = n % 4 == 1 ? n - 1 : n;
    if (quads > 0) {
      int groupBlocks = (int) Math.max(2, Math.min(end - b0, BLOCK_BYTES / blockBytes) & ~1);
      int blockTokens = (int) Math.max(4, (BLOCK_BYTES / (cols * 4L)) & ~3);
      for (int g = b0; g < end; g += groupBlocks) {
        int gLast = Math.min(g + groupBlocks, end) - 1;
        for (int t0 = 0; t0 < quads; t0 += blockTokens) {
          int tLast = Math.min(t0 + blockTokens, quads) - 1;
          for (int b = g; b <= gLast; b += 2) {
            int bb = Math.min(b + 1, gLast);
            for (int t = t0; t <= tLast; t += 4) {
              int tb = Math.min(t + 1, tLast);
              int tc = Math.min(t + 2, tLast);
              int td = Math.min(t + 3, tLast);
              packed2x4(
                  packed,
                  blockBytes,
                  cols,
                  b,
                  bb,
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
                  lastBlock,
                  lastRows);
            }
          }
        }
      }
    }
    if (quads < n) {
      for (int b = b0; b < end; b += 4) {
        packed4x1(
            packed,
            blockBytes,
            cols,
            b,
            Math.min(b + 1, lastBlock),
            Math.min(b + 2, lastBlock),
            Math.min(b + 3, lastBlock),
            x,
            xOffsets[n - 1],
            out,
            outOffsets[n - 1],
            lastBlock,
            lastRows);
      }
    }
  }

  /** Packed row blocks ba..bd times one token. */
  private static void packed4x1(
      MemorySegment w,
      long blockBytes,
      int cols,
      int ba,
      int bb,
      int bc,
      int bd,
      float[] x,
      int xo,
      float[] out,
      int oo,
      int lastBlock,
      int lastRows) {
    long wa = ba * blockBytes;
    long wb = bb * blockBytes;
    long wc = bc * blockBytes;
    long wd = bd * blockBytes;
    FloatVector aa = FloatVector.zero(F);
    FloatVector ab = aa;
    FloatVector ac = aa;
    FloatVector ad = aa;
    int full = cols >> 1;
    for (int p = 0; p < full; p++) {
      long off = (long) p * LANES * 4;
      IntVector va = IntVector.fromMemorySegment(I, w, wa + off, LE);
      IntVector vb = IntVector.fromMemorySegment(I, w, wb + off, LE);
      IntVector vc = IntVector.fromMemorySegment(I, w, wc + off, LE);
      IntVector vd = IntVector.fromMemorySegment(I, w, wd + off, LE);
      FloatVector x0 = FloatVector.broadcast(F, x[xo + 2 * p]);
      aa = even(va).fma(x0, aa);
      ab = even(vb).fma(x0, ab);
      ac = even(vc).fma(x0, ac);
      ad = even(vd).fma(x0, ad);
      FloatVector x1 = FloatVector.broadcast(F, x[xo + 2 * p + 1]);
      aa = odd(va).fma(x1, aa);
      ab = odd(vb).fma(x1, ab);
      ac = odd(vc).fma(x1, ac);
      ad = odd(vd).fma(x1, ad);
    }
    if ((cols & 1) != 0) {
      long off = (long) full * LANES * 4;
      FloatVector x0 = FloatVector.broadcast(F, x[xo + cols - 1]);
      aa = even(IntVector.fromMemorySegment(I, w, wa + off, LE)).fma(x0, aa);
      ab = even(IntVector.fromMemorySegment(I, w, wb + off, LE)).fma(x0, ab);
      ac = even(IntVector.fromMemorySegment(I, w, wc + off, LE)).fma(x0, ac);
      ad = even(IntVector.fromMemorySegment(I, w, wd + off, LE)).fma(x0, ad);
    }
    store(aa, out, oo, ba, lastBlock, lastRows);
    store(ab, out, oo, bb, lastBlock, lastRows);
    store(ac, out, oo, bc, lastBlock, lastRows);
    store(ad, out, oo, bd, lastBlock, lastRows);
  }

  /** Packed row blocks ba, bb times tokens a..d. */
  private static void packed2x4(
      MemorySegment w,
      long blockBytes,
      int cols,
      int ba,
      int bb,
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
      int lastBlock,
      int lastRows) {
    long wa = ba * blockBytes;
    long wb = bb * blockBytes;
    FloatVector aa = FloatVector.zero(F);
    FloatVector ab = aa;
    FloatVector ac = aa;
    FloatVector ad = aa;
    FloatVector ba_ = aa;
    FloatVector bb_ = aa;
    FloatVector bc = aa;
    FloatVector bd = aa;
    int full = cols >> 1;
    for (int p = 0; p < full; p++) {
      long off = (long) p * LANES * 4;
      IntVector va = IntVector.fromMemorySegment(I, w, wa + off, LE);
      IntVector vb = IntVector.fromMemorySegment(I, w, wb + off, LE);
      int c = 2 * p;
      FloatVector ea = even(va);
      FloatVector eb = even(vb);
      FloatVector x0 = FloatVector.broadcast(F, x[xa + c]);
      aa = ea.fma(x0, aa);
      ba_ = eb.fma(x0, ba_);
      FloatVector x1 = FloatVector.broadcast(F, x[xb + c]);
      ab = ea.fma(x1, ab);
      bb_ = eb.fma(x1, bb_);
      FloatVector x2 = FloatVector.broadcast(F, x[xc + c]);
      ac = ea.fma(x2, ac);
      bc = eb.fma(x2, bc);
      FloatVector x3 = FloatVector.broadcast(F, x[xd + c]);
      ad = ea.fma(x3, ad);
      bd = eb.fma(x3, bd);
      FloatVector oda = odd(va);
      FloatVector odb = odd(vb);
      x0 = FloatVector.broadcast(F, x[xa + c + 1]);
      aa = oda.fma(x0, aa);
      ba_ = odb.fma(x0, ba_);
      x1 = FloatVector.broadcast(F, x[xb + c + 1]);
      ab = oda.fma(x1, ab);
      bb_ = odb.fma(x1, bb_);
      x2 = FloatVector.broadcast(F, x[xc + c + 1]);
      ac = oda.fma(x2, ac);
      bc = odb.fma(x2, bc);
      x3 = FloatVector.broadcast(F, x[xd + c + 1]);
      ad = oda.fma(x3, ad);
      bd = odb.fma(x3, bd);
    }
    if ((cols & 1) != 0) {
      long off = (long) full * LANES * 4;
      int c = cols - 1;
      FloatVector ea = even(IntVector.fromMemorySegment(I, w, wa + off, LE));
      FloatVector eb = even(IntVector.fromMemorySegment(I, w, wb + off, LE));
      FloatVector x0 = FloatVector.broadcast(F, x[xa + c]);
      aa = ea.fma(x0, aa);
      ba_ = eb.fma(x0, ba_);
      FloatVector x1 = FloatVector.broadcast(F, x[xb + c]);
      ab = ea.fma(x1, ab);
      bb_ = eb.fma(x1, bb_);
      FloatVector x2 = FloatVector.broadcast(F, x[xc + c]);
      ac = ea.fma(x2, ac);
      bc = eb.fma(x2, bc);
      FloatVector x3 = FloatVector.broadcast(F, x[xd + c]);
      ad = ea.fma(x3, ad);
      bd = eb.fma(x3, bd);
    }
    store(aa, out, oa, ba, lastBlock, lastRows);
    store(ba_, out, oa, bb, lastBlock, lastRows);
    store(ab, out, ob, ba, lastBlock, lastRows);
    store(bb_, out, ob, bb, lastBlock, lastRows);
    store(ac, out, oc, ba, lastBlock, lastRows);
    store(bc, out, oc, bb, lastBlock, lastRows);
    store(ad, out, od, ba, lastBlock, lastRows);
    store(bd, out, od, bb, lastBlock, lastRows);
  }

  /** The even columns of a packed pair vector as f32: the low halves, shifted up. */
  private static FloatVector even(IntVector pairs) {
    return pairs.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
  }

  /** The odd columns of a packed pair vector as f32: the high halves, low bits cleared. */
  private static FloatVector odd(IntVector pairs) {
    return pairs.and(0xffff0000).reinterpretAsFloats();
  }

  /** Writes block {@code b}'s rows of one token; the last block may hold fewer rows. */
  private static void store(
      FloatVector v, float[] out, int oo, int b, int lastBlock, int lastRows) {
    if (b == lastBlock && lastRows < LANES) {
      v.intoArray(out, oo + b * LANES, F.indexInRange(0, lastRows));
    } else {
      v.intoArray(out, oo + b * LANES);
    }
  }

  @Override
  public void toFloats(MemorySegment src, long index, float[] dst, int dstOffset, int count) {
    long base = index * BYTES;
    int bound = F.loopBound(count);
    int c = 0;
    for (; c < bound; c += LANES) {
      load(src, base + c * BYTES).intoArray(dst, dstOffset + c);
    }
    for (; c < count; c++) {
      dst[dstOffset + c] = scalar(src, base + c * BYTES);
    }
  }

  /** Loads {@code LANES} weights at a byte offset and widens them to f32, exactly. */
  private static FloatVector load(MemorySegment w, long byteOffset) {
    if (F32) {
      return FloatVector.fromMemorySegment(F, w, byteOffset, LE);
    }
    IntVector bits =
        (IntVector)
            ShortVector.fromMemorySegment(S, w, byteOffset, LE)
                .convertShape(VectorOperators.S2I, I, 0);
    if (BF16) {
      // bf16 is the top half of an f32; the sign-extension bits are shifted out.
      return bits.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
    }
    return f16ToF32(bits);
  }

  /**
   * f16 to f32 on sign-extended 16-bit lanes (the Vector API has no f16 conversion). Normal numbers
   * rebias the exponent (+112); infinities and NaNs rebias to 255 and NaNs come out quiet, as from
   * {@link Float#float16ToFloat}; subnormals are scaled from their integer mantissa, which avoids
   * slow arithmetic on f32 subnormals. Flags are computed arithmetically rather than with masked
   * operations, which AVX2 lacks and the Vector API would then emulate.
   */
  private static FloatVector f16ToF32(IntVector bits) {
    IntVector magnitude = bits.and(0x7fff);
    IntVector infOrNan = magnitude.add(0x0400).lanewise(VectorOperators.LSHR, 15); // 1 if >= 0x7c00
    IntVector nan = magnitude.add(0x03ff).lanewise(VectorOperators.LSHR, 15); // 1 if > 0x7c00
    IntVector normal =
        magnitude
            .lanewise(VectorOperators.LSHL, 13)
            .add(0x38000000)
            .add(infOrNan.neg().and(0x38000000))
            .or(nan.lanewise(VectorOperators.LSHL, 22));
    IntVector subnormal =
        ((FloatVector) magnitude.convert(VectorOperators.I2F, 0)).mul(0x1p-24f).reinterpretAsInts();
    IntVector unsigned = normal.blend(subnormal, magnitude.compare(VectorOperators.LT, 0x0400));
    return unsigned.or(bits.and(0x80000000)).reinterpretAsFloats();
  }

  private static float scalar(MemorySegment w, long byteOffset) {
    if (F32) {
      return w.get(F32_LE, byteOffset);
    }
    short bits = w.get(I16_LE, byteOffset);
    return BF16 ? Float.intBitsToFloat(bits << 16) : Float.float16ToFloat(bits);
  }

  /**
   * Sums the lanes in a fixed pairwise order, in registers: lane {@code i} gets lane {@code i ^
   * half} added while {@code half} halves from {@code LANES / 2} to 1, then lane 0 holds the sum.
   * {@code reduceLanes(ADD)} may add in a different order when compiled than when interpreted,
   * which made results depend on JIT state; these lane-wise adds of fixed shuffles give the same
   * bits either way, and each row's sum is a function of its accumulator alone, so results do not
   * depend on the tile, the batch or the threads (greedy decoding must not depend on batching or
   * warm-up).
   */
  private static float sum(FloatVector v) {
    if (LANES >= 16) {
      v = v.add(v.rearrange(FOLD_8));
    }
    if (LANES >= 8) {
      v = v.add(v.rearrange(FOLD_4));
    }
    v = v.add(v.rearrange(FOLD_2));
    v = v.add(v.rearrange(FOLD_1));
    return v.lane(0);
  }

  /**
   * The sums of {@link #sum} for four accumulators at once, with the same additions on the same
   * operands: the two widest folds each combine two accumulators in one vector (the first one's
   * folded lanes where bit {@code half} is clear, the second's where it is set), so four sums cost
   * three combined folds and the narrow folds of one vector instead of four full trees. The sums
   * land in lanes 0 ({@code a}), {@code H1} ({@code b}), {@code H2} ({@code c}) and {@code H1 + H2}
   * ({@code d}).
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
