package dev.ringmaster.cuda.model;

/**
 * A weight matrix {@code [rows, cols]} (row-major, PyTorch's {@code [out, in]}) in device memory
 * owned elsewhere: bf16, or DeepSeek FP8 block-scaled (e4m3 codes with one f32 scale per 128x128
 * block; the layout of {@code fp8_weights.cu}).
 *
 * @param ptr device pointer of element (0, 0): bf16 values, or e4m3 codes when {@code scales != 0}
 * @param rows output features
 * @param cols input features
 * @param bias f32 bias of {@code rows} values added to the output, or 0
 * @param scales f32 block scales of an FP8 matrix, or 0 for bf16
 * @param scalePartRows rows per separately quantized part of an FP8 matrix (all its rows, or {@code
 *     inter} for a fused gate|up matrix); 0 for bf16
 */
record DeviceMatrix(long ptr, int rows, int cols, long bias, long scales, int scalePartRows) {
  /** A bf16 matrix without bias. */
  DeviceMatrix(long ptr, int rows, int cols) {
    this(ptr, rows, cols, 0, 0, 0);
  }

  /** A bf16 matrix with a bias (or 0). */
  DeviceMatrix(long ptr, int rows, int cols, long bias) {
    this(ptr, rows, cols, bias, 0, 0);
  }

  /** An FP8 block-scaled matrix without bias. */
  static DeviceMatrix fp8(long codes, long scales, int rows, int cols, int partRows) {
    return new DeviceMatrix(codes, rows, cols, 0, scales, partRows);
  }

  /** Whether this matrix holds FP8 codes with block scales rather than bf16 values. */
  boolean fp8() {
    return scales != 0;
  }

  /** This matrix with a bias. */
  DeviceMatrix withBias(long biasPtr) {
    return new DeviceMatrix(ptr, rows, cols, biasPtr, scales, scalePartRows);
  }
}
