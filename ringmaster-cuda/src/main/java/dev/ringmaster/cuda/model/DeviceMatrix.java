package dev.ringmaster.cuda.model;

/**
 * A weight matrix {@code [rows, cols]} (row-major, PyTorch's {@code [out, in]}) in device memory
 * owned elsewhere: bf16; DeepSeek FP8 block-scaled (e4m3 codes with one f32 scale per 128x128
 * block; the layout of {@code fp8_weights.cu}); or ModelOpt NVFP4 (e2m1 codes in {@link
 * dev.ringmaster.cuda.kernels.Nvfp4Layout}'s device order, one e4m3 scale per 16 elements of a row,
 * one f32 global scale per part; the layout of {@code nvfp4_weights.cu}).
 *
 * @param ptr device pointer of element (0, 0): bf16 values, e4m3 codes, or packed e2m1 codes
 * @param rows output features
 * @param cols input features
 * @param bias f32 bias of {@code rows} values added to the output, or 0
 * @param scales the block scales (f32 for FP8, e4m3 bytes {@code [rows, cols / 16]} for NVFP4), or
 *     0 for bf16
 * @param scalePartRows rows per separately quantized part (all its rows, or {@code inter} for a
 *     fused gate|up matrix); 0 for bf16
 * @param globalScales f32 global scale of each part of an NVFP4 matrix ({@code rows /
 *     scalePartRows} values), 0 otherwise
 */
record DeviceMatrix(
    long ptr, int rows, int cols, long bias, long scales, int scalePartRows, long globalScales) {
  /** A bf16 matrix without bias. */
  DeviceMatrix(long ptr, int rows, int cols) {
    this(ptr, rows, cols, 0, 0, 0, 0);
  }

  /** A bf16 matrix with a bias (or 0). */
  DeviceMatrix(long ptr, int rows, int cols, long bias) {
    this(ptr, rows, cols, bias, 0, 0, 0);
  }

  /** An FP8 block-scaled matrix without bias. */
  static DeviceMatrix fp8(long codes, long scales, int rows, int cols, int partRows) {
    return new DeviceMatrix(codes, rows, cols, 0, scales, partRows, 0);
  }

  /** An NVFP4 matrix without bias. */
  static DeviceMatrix nvfp4(
      long codes, long scales, long globals, int rows, int cols, int partRows) {
    return new DeviceMatrix(codes, rows, cols, 0, scales, partRows, globals);
  }

  /** Whether this matrix holds FP8 codes with block scales. */
  boolean fp8() {
    return scales != 0 && globalScales == 0;
  }

  /** Whether this matrix holds NVFP4 codes with group and global scales. */
  boolean nvfp4() {
    return globalScales != 0;
  }

  /** Whether this matrix is quantized (FP8 or NVFP4) rather than bf16. */
  boolean quantized() {
    return scales != 0;
  }

  /** This matrix with a bias. */
  DeviceMatrix withBias(long biasPtr) {
    return new DeviceMatrix(ptr, rows, cols, biasPtr, scales, scalePartRows, globalScales);
  }
}
