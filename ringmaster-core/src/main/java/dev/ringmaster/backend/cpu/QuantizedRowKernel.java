package dev.ringmaster.backend.cpu;

/**
 * The row decoder of one quantized code type at one vector width (see {@link RowKernels}): rows of
 * codes to f32 in vectors, with the bits of {@link Dequantizer#row}. Implementations are stateless
 * and safe to call from several threads at once.
 */
interface QuantizedRowKernel {
  /**
   * Writes row {@code r} of {@code w} as f32 into {@code dst} from {@code dstOffset}: the bits of
   * {@link Dequantizer#row}.
   */
  void decodeRow(CpuMatrix w, int r, float[] dst, int dstOffset);
}
