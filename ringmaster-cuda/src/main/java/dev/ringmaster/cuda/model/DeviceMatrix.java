package dev.ringmaster.cuda.model;

/**
 * A bf16 weight matrix {@code [rows, cols]} (row-major, PyTorch's {@code [out, in]}) in device
 * memory owned elsewhere.
 *
 * @param ptr device pointer of element (0, 0)
 * @param rows output features
 * @param cols input features
 * @param bias f32 bias of {@code rows} values added to the output, or 0
 */
record DeviceMatrix(long ptr, int rows, int cols, long bias) {
  /** A matrix without bias. */
  DeviceMatrix(long ptr, int rows, int cols) {
    this(ptr, rows, cols, 0);
  }

  /** This matrix with a bias. */
  DeviceMatrix withBias(long biasPtr) {
    return new DeviceMatrix(ptr, rows, cols, biasPtr);
  }
}
