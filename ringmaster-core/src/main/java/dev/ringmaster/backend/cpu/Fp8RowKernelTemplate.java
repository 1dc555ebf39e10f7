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
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;

/**
 * The decoder of FP8 weights (e4m3 codes with 128x128 block scales or one tensor scale) for the
 * quantized matmul ({@link QuantizedRows}): rows of codes to f32 in vectors, specialised per vector
 * width as {@link RowKernelTemplate} is (a hidden copy per {@link KernelSpec}, see there why). Each
 * weight is its code's exact e4m3 value times its scale, one f32 multiply, so the rows have the
 * bits {@link Dequantizer} gives, raw bits included (NaN codes, signed zeros).
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

  /**
   * The scales of the row blocks that rows {@code r0..r1} touch, {@code [block - r0 / BLOCK][column
   * block]}; a tensor scale gives one row of them.
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
}
