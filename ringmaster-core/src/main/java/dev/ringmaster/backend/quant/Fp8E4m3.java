package dev.ringmaster.backend.quant;

/**
 * The 8-bit float e4m3fn (OCP FP8 E4M3, PyTorch {@code float8_e4m3fn}): 1 sign, 4 exponent (bias
 * 7), 3 mantissa bits; no infinities; {@code 0x7f} and {@code 0xff} are NaN; largest finite 448;
 * smallest subnormal 2^-9.
 */
public final class Fp8E4m3 {
  /** The largest finite value. */
  public static final float MAX = 448f;

  private static final float[] DECODE = decodeTable();

  private Fp8E4m3() {}

  /** The value of code {@code bits} (low 8 bits used), exactly. */
  public static float decode(int bits) {
    return DECODE[bits & 0xff];
  }

  /** All 256 values, indexed by code (a copy; NaN at 0x7f and 0xff). */
  public static float[] table() {
    return DECODE.clone();
  }

  /**
   * The code nearest to {@code x} (ties to even), saturating to ±448 as a quantizer's clamp before
   * the cast does; NaN gives 0x7f. {@code -0.0} keeps its sign.
   */
  public static byte encode(float x) {
    if (Float.isNaN(x)) {
      return 0x7f;
    }
    int sign = (Float.floatToRawIntBits(x) >>> 24) & 0x80;
    double a = Math.min(Math.abs((double) x), MAX);
    int code;
    if (a < 0x1p-6) {
      // Subnormal range: steps of 2^-9; 8 steps reach the smallest normal, which encodes as 0x08.
      code = (int) Math.rint(a * 0x1p9);
    } else {
      int e = Math.getExponent(a);
      double step = Math.scalb(1.0, e - 3);
      double q = Math.rint(a / step) * step; // exact: a / step is a power-of-two scaling
      int qe = Math.getExponent(q);
      int mantissa = (int) Math.round((q / Math.scalb(1.0, qe) - 1.0) * 8);
      code = ((qe + 7) << 3) | mantissa;
    }
    return (byte) (sign | code);
  }

  private static float[] decodeTable() {
    float[] t = new float[256];
    for (int b = 0; b < 256; b++) {
      int e = (b >>> 3) & 0xf;
      int m = b & 7;
      float v;
      if (e == 0xf && m == 7) {
        v = Float.NaN;
      } else if (e == 0) {
        v = m * 0x1p-9f;
      } else {
        v = (1f + m / 8f) * (float) Math.scalb(1.0, e - 7);
      }
      t[b] = (b & 0x80) != 0 ? -v : v;
    }
    return t;
  }
}
