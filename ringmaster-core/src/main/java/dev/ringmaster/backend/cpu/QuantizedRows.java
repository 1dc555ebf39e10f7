package dev.ringmaster.backend.cpu;

import java.lang.foreign.MemorySegment;

/**
 * The matmul over a quantized matrix by way of f32: a group of rows is dequantized into an f32
 * scratch block (sized to stay in cache), then the f32 {@link RowKernel} multiplies it with every
 * token. Products run the in-register kernels ({@link Fp8RowKernelTemplate}, {@link
 * Nvfp4RowKernelTemplate}), which give the same bits; this form is kept for benchmarks to compare
 * against ({@link CpuKernelContext#withScratchDequantization}) and as the definition in tests.
 */
final class QuantizedRows {
  /** Bytes of decoded rows held at once. */
  private static final int SCRATCH_BYTES = 64 * 1024;

  private QuantizedRows() {}

  /** {@link RowKernel#rows} for quantized {@code w}, using the f32 kernel {@code f32}. */
  static void rows(
      RowKernel f32,
      CpuMatrix w,
      int r0,
      int r1,
      float[] x,
      int[] xOffsets,
      float[] out,
      int[] outOffsets) {
    int cols = w.cols();
    int group = Math.max(1, Math.min(r1 - r0, SCRATCH_BYTES / (cols * 4)));
    MemorySegment scratch = MemorySegment.ofArray(new byte[group * cols * 4]);
    float[] row = new float[cols];
    int[] shifted = new int[outOffsets.length];
    for (int g = r0; g < r1; g += group) {
      int n = Math.min(group, r1 - g);
      for (int i = 0; i < n; i++) {
        Dequantizer.row(w, g + i, row, 0);
        MemorySegment.copy(row, 0, scratch, Numerics.F32_LE, (long) i * cols * 4, cols);
      }
      for (int t = 0; t < shifted.length; t++) {
        shifted[t] = outOffsets[t] + g;
      }
      f32.rows(scratch, cols, 0, n, x, xOffsets, out, shifted);
    }
  }
}
