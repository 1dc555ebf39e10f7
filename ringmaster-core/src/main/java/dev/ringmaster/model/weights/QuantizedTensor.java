package dev.ringmaster.model.weights;

/**
 * One quantized linear weight {@code [rows, cols]} of a checkpoint with its scales, as found and
 * checked by {@link QuantizedTensors#find}. The dequantized weight is, in f32:
 *
 * <ul>
 *   <li>{@link Format#FP8_BLOCK}: {@code W[r][c] = e4m3(codes[r][c]) * scales[r/128][c/128]}
 *       ({@code weight_scale_inv}, f32 {@code [ceil(rows/128), ceil(cols/128)]}; a multiplier
 *       despite its name).
 *   <li>{@link Format#FP8_TENSOR}: {@code W[r][c] = e4m3(codes[r][c]) * globalScale} ({@code
 *       weight_scale}).
 *   <li>{@link Format#NVFP4}: {@code W[r][c] = e2m1(codes[r][c]) * (e4m3(scales[r][c/16]) *
 *       globalScale)}, the scale product first ({@code weight} U8 {@code [rows, cols/2]}, element
 *       {@code 2i} in the low nibble; {@code weight_scale} e4m3 {@code [rows, cols/16]}; {@code
 *       weight_scale_2} f32 scalar).
 * </ul>
 *
 * @param format the storage format
 * @param weight the codes ({@code F8_E4M3 [rows, cols]} or {@code U8 [rows, cols/2]})
 * @param scales the block scales, or null for {@link Format#FP8_TENSOR}
 * @param globalScale the per-tensor scale (1 for {@link Format#FP8_BLOCK})
 * @param rows output features
 * @param cols input features
 */
public record QuantizedTensor(
    Format format, TensorView weight, TensorView scales, float globalScale, int rows, int cols) {
  /** Storage formats of quantized linear weights. */
  public enum Format {
    /** DeepSeek FP8, one f32 scale per 128x128 block. */
    FP8_BLOCK,
    /** FP8 with one f32 scale for the whole tensor. */
    FP8_TENSOR,
    /** NVFP4: e2m1 codes, one e4m3 scale per 16 elements of a row, one f32 scale per tensor. */
    NVFP4
  }

  /** Bytes of codes and scales together. */
  public long bytes() {
    return weight.data().byteSize() + (scales == null ? 4 : scales.data().byteSize() + 4);
  }
}
