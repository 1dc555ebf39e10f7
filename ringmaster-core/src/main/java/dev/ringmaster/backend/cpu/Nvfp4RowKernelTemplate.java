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
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;

/**
 * The decoder of NVFP4 weights (e2m1 codes, two a byte, one e4m3 scale per 16 columns and a global
 * scale) for the quantized matmul ({@link QuantizedRows}): rows of codes to f32 in vectors,
 * specialised per vector width as {@link RowKernelTemplate} is (a hidden copy per {@link
 * KernelSpec}, see there why). Each weight is the exact e2m1 value times its group's scale, the
 * scale product {@code e4m3(scale) * globalScale} taken first, as {@link Dequantizer} takes it, so
 * the rows have its bits. A group's 8 code bytes come in one vector load.
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
    // One flat loop: vectors carried through nested loops were boxed by the JIT.
    for (int c = 0; c < w.cols(); c += LANES) {
      ByteVector codes =
          ByteVector.fromMemorySegment(B, w.data(), base + (c / GROUP) * (GROUP / 2), LE);
      FloatVector v;
      if (LANES == 16) {
        v = decode(codes, 0);
      } else if (LANES == 8) {
        v = (c & 8) == 0 ? decode(codes, 0) : decode(codes, 1);
      } else {
        v = decode(codes, (c >> 2) & 3);
      }
      v.mul(scales[c / GROUP]).intoArray(dst, dstOffset + c);
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
}
