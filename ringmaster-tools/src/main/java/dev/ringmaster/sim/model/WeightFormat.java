package dev.ringmaster.sim.model;

/**
 * How a weight matrix is stored, with the exact bytes of its values and scales.
 *
 * <ul>
 *   <li>{@link #BF16}: 2 bytes per value.
 *   <li>{@link #FP8}: 1 byte per value (e4m3) plus one f32 scale per 128x128 block, as the
 *       DeepSeek-V3 checkpoint ({@code weight_block_size [128, 128]}).
 *   <li>{@link #NVFP4}: 4 bits per value (e2m1), one fp8 (e4m3) scale per 16 consecutive values of
 *       a row, and one f32 global scale per tensor, as NVFP4 checkpoints.
 * </ul>
 */
public enum WeightFormat {
  /** bfloat16. */
  BF16("bf16"),
  /** fp8 e4m3 with 128x128 block f32 scales. */
  FP8("fp8"),
  /** NVFP4: e2m1 values, e4m3 scale per 16 values, f32 per-tensor scale. */
  NVFP4("nvfp4");

  /** Block edge of FP8 block scaling. */
  public static final int FP8_BLOCK = 128;

  /** Values sharing one NVFP4 micro-scale. */
  public static final int NVFP4_GROUP = 16;

  private final String cliName;

  WeightFormat(String cliName) {
    this.cliName = cliName;
  }

  /** Name used on the command line and in profiles. */
  public String cliName() {
    return cliName;
  }

  /** Parses a CLI name. */
  public static WeightFormat parse(String name) {
    for (WeightFormat f : values()) {
      if (f.cliName.equalsIgnoreCase(name)) {
        return f;
      }
    }
    throw new IllegalArgumentException("unknown weight format '" + name + "' (bf16, fp8, nvfp4)");
  }

  /** Bytes of one {@code rows x cols} matrix in this format, scales included. */
  public double matrixBytes(long rows, long cols) {
    return switch (this) {
      case BF16 -> 2.0 * rows * cols;
      case FP8 -> (double) rows * cols + 4.0 * ceilDiv(rows, FP8_BLOCK) * ceilDiv(cols, FP8_BLOCK);
      case NVFP4 -> 0.5 * rows * cols + (double) rows * ceilDiv(cols, NVFP4_GROUP) + 4.0;
    };
  }

  /** Tensor-core dtype the matmul runs in (the profile's rate table key). */
  public String computeDtype() {
    return cliName;
  }

  private static long ceilDiv(long a, long b) {
    return (a + b - 1) / b;
  }
}
