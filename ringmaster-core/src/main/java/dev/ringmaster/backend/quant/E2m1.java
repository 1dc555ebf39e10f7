package dev.ringmaster.backend.quant;

/**
 * The 4-bit float e2m1 of NVFP4: codes 0..7 are 0, 0.5, 1, 1.5, 2, 3, 4, 6 and bit 3 is the sign
 * (code 8 is -0). Two codes share a byte in checkpoints: element {@code 2i} in the low nibble,
 * {@code 2i+1} in the high nibble.
 */
public final class E2m1 {
  /** The largest magnitude. */
  public static final float MAX = 6f;

  private static final float[] DECODE = {
    0f, 0.5f, 1f, 1.5f, 2f, 3f, 4f, 6f, -0f, -0.5f, -1f, -1.5f, -2f, -3f, -4f, -6f
  };

  private E2m1() {}

  /** The value of code {@code code} (low 4 bits used). */
  public static float decode(int code) {
    return DECODE[code & 0xf];
  }

  /** All 16 values, indexed by code (a copy). */
  public static float[] table() {
    return DECODE.clone();
  }

  /**
   * The code nearest to {@code x}, ties to the even code, saturating at ±6: the thresholds of
   * ModelOpt's and Transformer Engine's reference casts. A negative {@code x} that rounds to zero
   * gives -0 (code 8); NaN gives 0, as those casts' comparisons do.
   */
  public static int encode(float x) {
    if (Float.isNaN(x)) {
      return 0;
    }
    float a = Math.abs(x);
    int code;
    if (a <= 0.25f) {
      code = 0;
    } else if (a < 0.75f) {
      code = 1;
    } else if (a <= 1.25f) {
      code = 2;
    } else if (a < 1.75f) {
      code = 3;
    } else if (a <= 2.5f) {
      code = 4;
    } else if (a < 3.5f) {
      code = 5;
    } else if (a <= 5f) {
      code = 6;
    } else {
      code = 7;
    }
    return x < 0f ? code | 8 : code;
  }
}
