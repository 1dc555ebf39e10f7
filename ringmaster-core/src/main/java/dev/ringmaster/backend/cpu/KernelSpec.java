package dev.ringmaster.backend.cpu;

import dev.ringmaster.backend.DType;

/**
 * What one specialised copy of a kernel template is compiled for: {@link RowKernelTemplate} for
 * float weights, {@link Fp8RowKernelTemplate} for FP8 codes, {@link Nvfp4RowKernelTemplate} for
 * NVFP4 codes.
 *
 * @param vectorBits width of the float vectors: 128, 256 or 512
 * @param dtype the weight element type: F32, BF16 or F16; F8_E4M3 (FP8 codes) or U8 (NVFP4 codes)
 */
record KernelSpec(int vectorBits, DType dtype) {
  KernelSpec {
    if (vectorBits != 128 && vectorBits != 256 && vectorBits != 512) {
      throw new IllegalArgumentException("vector bits must be 128, 256 or 512, got " + vectorBits);
    }
    if (dtype != DType.F32
        && dtype != DType.BF16
        && dtype != DType.F16
        && dtype != DType.F8_E4M3
        && dtype != DType.U8) {
      throw new IllegalArgumentException(
          "kernel dtype must be F32, BF16, F16, F8_E4M3 or U8, got " + dtype);
    }
  }

  /** Whether the dtype is one of quantized codes (FP8 or NVFP4). */
  boolean quantized() {
    return dtype == DType.F8_E4M3 || dtype == DType.U8;
  }
}
