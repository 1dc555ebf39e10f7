package dev.ringmaster.cuda.model;

/**
 * A bf16 weight matrix {@code [rows, cols]} (row-major, PyTorch's {@code [out, in]}) in device
 * memory owned elsewhere.
 *
 * @param ptr device pointer of element (0, 0)
 * @param rows output features
 * @param cols input features
 */
record DeviceMatrix(long ptr, int rows, int cols) {}
