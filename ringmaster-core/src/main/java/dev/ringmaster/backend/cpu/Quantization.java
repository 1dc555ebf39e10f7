package dev.ringmaster.backend.cpu;

import java.lang.foreign.MemorySegment;

/**
 * How the elements of a quantized {@link CpuMatrix} decode to f32, with the scales they need. The
 * scales stay in their checkpoint format (mapped, or copied with a column slice).
 */
public sealed interface Quantization {
  /** Rows and columns of one FP8 scale block. */
  int FP8_BLOCK = 128;

  /** Elements of one NVFP4 scale group. */
  int NVFP4_GROUP = 16;

  /**
   * DeepSeek FP8: {@code W[r][c] = e4m3(data[r][c]) * scales[r / 128][c / 128]}.
   *
   * @param scales f32, row-major {@code [ceil(rows / 128), scaleCols]}
   * @param scaleCols {@code ceil(cols / 128)}
   */
  record Fp8Block(MemorySegment scales, int scaleCols) implements Quantization {}

  /**
   * Per-tensor FP8: {@code W[r][c] = e4m3(data[r][c]) * scale}.
   *
   * @param scale the tensor's scale
   */
  record Fp8Tensor(float scale) implements Quantization {}

  /**
   * NVFP4: {@code W[r][c] = e2m1(code) * (e4m3(scales[r][c / 16]) * globalScale)}, the scale
   * product taken first; the codes of elements {@code 2i, 2i+1} are the low and high nibbles of
   * byte {@code i} of the row.
   *
   * @param scales e4m3, row-major {@code [rows, cols / 16]}
   * @param globalScale {@code weight_scale_2}
   */
  record Nvfp4(MemorySegment scales, float globalScale) implements Quantization {}
}
