package dev.ringmaster.backend.cpu;

/**
 * A matmul kernel for quantized weights specialised for one code type and one vector width (see
 * {@link RowKernels}): it decodes the codes in registers and gives, for every (row, token), the
 * bits the f32 {@link RowKernel#rows} of the same width gives on the matrix {@link Dequantizer}
 * decodes. Implementations are stateless and safe to call from several threads at once.
 */
interface QuantizedRowKernel {
  /**
   * Computes {@code out[outOffsets[t] + r] = sum_c x[xOffsets[t] + c] * W[r][c]} for rows {@code r0
   * <= r < r1} of the quantized matrix {@code w} and every token {@code t < xOffsets.length}.
   */
  void rows(CpuMatrix w, int r0, int r1, float[] x, int[] xOffsets, float[] out, int[] outOffsets);

  /**
   * Writes row {@code r} of {@code w} as f32 into {@code dst} from {@code dstOffset}: the bits of
   * {@link Dequantizer#row}.
   */
  void decodeRow(CpuMatrix w, int r, float[] dst, int dstOffset);
}
