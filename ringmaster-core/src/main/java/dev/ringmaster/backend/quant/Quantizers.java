package dev.ringmaster.backend.quant;

/**
 * Quantizes an f32 weight matrix {@code [rows, cols]} (row-major) into the checkpoint formats, all
 * arithmetic in f32 so that a NumPy/PyTorch implementation of the same steps gives the same bytes
 * ({@code scripts/make_quant_fixtures.py} is one):
 *
 * <ul>
 *   <li>FP8 block (DeepSeek): per 128x128 block (edge blocks partial) {@code s = amax / 448} (1
 *       when the block is all zeros), codes {@code e4m3(clamp(w / s, ±448))}; {@code
 *       weight_scale_inv = s}.
 *   <li>NVFP4 (ModelOpt / Transformer Engine recipe): from the tensor's {@code amax} (shared by an
 *       MLP's gate and up projections), {@code enc = 2688 / amax} ({@code 448 * 6}), {@code
 *       weight_scale_2 = 1 / enc}; per 16 elements {@code weight_scale = e4m3(min(amax16 / 6 * enc,
 *       448))}, codes {@code e2m1(clamp(w * (1 / (weight_scale * weight_scale_2)), ±6))}.
 * </ul>
 */
public final class Quantizers {
  /** FP8 block size. */
  public static final int FP8_BLOCK = 128;

  /** NVFP4 group size. */
  public static final int NVFP4_GROUP = 16;

  private Quantizers() {}

  /**
   * DeepSeek block-scaled FP8.
   *
   * @param codes e4m3 codes, {@code [rows, cols]}
   * @param scaleInv f32 block scales, {@code [ceil(rows/128), ceil(cols/128)]}
   */
  public record Fp8Block(byte[] codes, float[] scaleInv) {}

  /**
   * NVFP4.
   *
   * @param packed e2m1 codes, two per byte (element {@code 2i} low), {@code [rows, cols/2]}
   * @param scales e4m3 group scales, {@code [rows, cols/16]}
   * @param scale2 the per-tensor {@code weight_scale_2}
   */
  public record Nvfp4(byte[] packed, byte[] scales, float scale2) {}

  /** Quantizes {@code w} to block-scaled FP8. */
  public static Fp8Block fp8Block(float[] w, int rows, int cols) {
    checkSize(w, rows, cols);
    int br = (rows + FP8_BLOCK - 1) / FP8_BLOCK;
    int bc = (cols + FP8_BLOCK - 1) / FP8_BLOCK;
    byte[] codes = new byte[rows * cols];
    float[] scales = new float[br * bc];
    for (int i = 0; i < br; i++) {
      int r0 = i * FP8_BLOCK;
      int r1 = Math.min(rows, r0 + FP8_BLOCK);
      for (int j = 0; j < bc; j++) {
        int c0 = j * FP8_BLOCK;
        int c1 = Math.min(cols, c0 + FP8_BLOCK);
        float amax = 0f;
        for (int r = r0; r < r1; r++) {
          for (int c = c0; c < c1; c++) {
            amax = Math.max(amax, Math.abs(finite(w[r * cols + c])));
          }
        }
        float s = amax == 0f ? 1f : amax / Fp8E4m3.MAX;
        scales[i * bc + j] = s;
        for (int r = r0; r < r1; r++) {
          for (int c = c0; c < c1; c++) {
            codes[r * cols + c] = Fp8E4m3.encode(w[r * cols + c] / s);
          }
        }
      }
    }
    return new Fp8Block(codes, scales);
  }

  /**
   * Quantizes the {@code n} values {@code x[off ..]} as one block with one scale, the rule of
   * {@link #fp8Block} (all in f32): {@code s = amax / 448} (1 when all are zero), {@code
   * codes[codeOff + i] = e4m3(clamp(x[off + i] / s, ±448))} rounded to nearest even. For
   * activations (an indexer key or one query head, at most {@value #FP8_BLOCK} values): a NaN is
   * kept (code 0x7f), not refused. Returns {@code s}.
   */
  public static float fp8Vector(float[] x, int off, int n, byte[] codes, int codeOff) {
    float amax = 0f;
    for (int i = 0; i < n; i++) {
      amax = Math.max(amax, Math.abs(x[off + i]));
    }
    float s = amax == 0f ? 1f : amax / Fp8E4m3.MAX;
    for (int i = 0; i < n; i++) {
      codes[codeOff + i] = Fp8E4m3.encode(x[off + i] / s);
    }
    return s;
  }

  /** The largest magnitude in {@code w} (NaN and infinities are refused). */
  public static float amax(float[] w) {
    float a = 0f;
    for (float v : w) {
      a = Math.max(a, Math.abs(finite(v)));
    }
    return a;
  }

  /**
   * Quantizes {@code w} to NVFP4 with the per-tensor scale derived from {@code amax} (the tensor's
   * own {@link #amax}, or the larger of an MLP's gate and up projections, which share it).
   */
  public static Nvfp4 nvfp4(float[] w, int rows, int cols, float amax) {
    checkSize(w, rows, cols);
    if (cols % NVFP4_GROUP != 0) {
      throw new IllegalArgumentException(
          "NVFP4 needs a multiple of 16 columns, got " + cols + " (exclude this module)");
    }
    int groups = cols / NVFP4_GROUP;
    byte[] packed = new byte[rows * cols / 2];
    byte[] scales = new byte[rows * groups];
    if (amax == 0f) {
      return new Nvfp4(packed, scales, 1f);
    }
    float enc = Math.min((Fp8E4m3.MAX * E2m1.MAX) / amax, Float.MAX_VALUE);
    float dec = 1f / enc;
    for (int r = 0; r < rows; r++) {
      for (int g = 0; g < groups; g++) {
        int base = r * cols + g * NVFP4_GROUP;
        float gmax = 0f;
        for (int k = 0; k < NVFP4_GROUP; k++) {
          gmax = Math.max(gmax, Math.abs(w[base + k]));
        }
        float scaled = Math.min(gmax / E2m1.MAX * enc, Fp8E4m3.MAX);
        byte sCode = Fp8E4m3.encode(scaled);
        scales[r * groups + g] = sCode;
        // An all-zero scale makes this infinite: w * inf saturates to ±6 and 0 * inf is NaN (code
        // 0), exactly as the reference casts behave; the decoded values are 0 either way.
        float encodeScale = 1f / (Fp8E4m3.decode(sCode) * dec);
        for (int k = 0; k < NVFP4_GROUP; k += 2) {
          int lo = E2m1.encode(clamp6(w[base + k] * encodeScale));
          int hi = E2m1.encode(clamp6(w[base + k + 1] * encodeScale));
          packed[(base + k) / 2] = (byte) (lo | (hi << 4));
        }
      }
    }
    return new Nvfp4(packed, scales, dec);
  }

  private static float clamp6(float v) {
    return Math.max(-E2m1.MAX, Math.min(E2m1.MAX, v));
  }

  private static float finite(float v) {
    if (!Float.isFinite(v)) {
      throw new IllegalArgumentException("cannot quantize a non-finite weight (" + v + ")");
    }
    return v;
  }

  private static void checkSize(float[] w, int rows, int cols) {
    if ((long) rows * cols != w.length) {
      throw new IllegalArgumentException(
          "matrix "
              + rows
              + "x"
              + cols
              + " needs "
              + (long) rows * cols
              + " values, got "
              + w.length);
    }
  }
}
