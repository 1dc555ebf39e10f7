package dev.ringmaster.backend.cpu;

import dev.ringmaster.backend.DType;

/**
 * What one specialised copy of {@link RowKernelTemplate} is compiled for.
 *
 * @param vectorBits width of the float vectors: 128, 256 or 512
 * @param dtype the weight element type: F32, BF16 or F16
 */
record KernelSpec(int vectorBits, DType dtype) {
  KernelSpec {
    if (vectorBits != 128 && vectorBits != 256 && vectorBits != 512) {
      throw new IllegalArgumentException("vector bits must be 128, 256 or 512, got " + vectorBits);
    }
    if (dtype != DType.F32 && dtype != DType.BF16 && dtype != DType.F16) {
      throw new IllegalArgumentException("kernel dtype must be F32, BF16 or F16, got " + dtype);
    }
  }
}
