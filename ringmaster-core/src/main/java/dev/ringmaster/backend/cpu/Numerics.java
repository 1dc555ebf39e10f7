package dev.ringmaster.backend.cpu;

import dev.ringmaster.backend.DType;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/** Scalar conversions between f32 and the 16-bit float formats, and element loads. */
public final class Numerics {
  static final ValueLayout.OfFloat F32_LE =
      ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
  static final ValueLayout.OfShort I16_LE =
      ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

  private Numerics() {}

  /** bf16 bits to f32 (exact). */
  public static float bf16ToFloat(short bits) {
    return Float.intBitsToFloat((bits & 0xffff) << 16);
  }

  /** f32 to bf16 bits, rounding to nearest even as PyTorch does; NaN stays NaN. */
  public static short floatToBf16(float f) {
    int x = Float.floatToRawIntBits(f);
    if ((x & 0x7fffffff) > 0x7f800000) {
      return (short) ((x >>> 16) | 0x40);
    }
    int rounding = 0x7fff + ((x >>> 16) & 1);
    return (short) ((x + rounding) >>> 16);
  }

  /** f16 bits to f32 (exact). */
  public static float f16ToFloat(short bits) {
    return Float.float16ToFloat(bits);
  }

  /** f32 to f16 bits, round to nearest even. */
  public static short floatToF16(float f) {
    return Float.floatToFloat16(f);
  }

  /** Loads element {@code index} of a segment holding {@code dtype} values as f32. */
  public static float load(MemorySegment seg, DType dtype, long index) {
    return switch (dtype) {
      case F32 -> seg.get(F32_LE, index * 4);
      case BF16 -> bf16ToFloat(seg.get(I16_LE, index * 2));
      case F16 -> f16ToFloat(seg.get(I16_LE, index * 2));
      default -> throw new IllegalArgumentException("not a float dtype: " + dtype);
    };
  }

  /** Stores f32 {@code value} as element {@code index} of a segment of {@code dtype}. */
  public static void store(MemorySegment seg, DType dtype, long index, float value) {
    switch (dtype) {
      case F32 -> seg.set(F32_LE, index * 4, value);
      case BF16 -> seg.set(I16_LE, index * 2, floatToBf16(value));
      case F16 -> seg.set(I16_LE, index * 2, floatToF16(value));
      default -> throw new IllegalArgumentException("not a float dtype: " + dtype);
    }
  }
}
