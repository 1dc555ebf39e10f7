package dev.ringmaster.backend.cpu;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The matmul over a quantized matrix: a group of rows is decoded to f32 into a block sized to stay
 * in cache, then the f32 {@link RowKernel} multiplies it with every token. Each weight row is
 * decoded once per call whatever the number of tokens, and every (row, token) result is the f32
 * kernel's on the decoded row, so results do not depend on threads, groups or batch.
 *
 * <p>Rows are decoded in vectors by the width's {@link QuantizedRowKernel}, into native memory: the
 * f32 kernel over a heap ({@code byte[]}) block compiled to code that boxed its vectors, several
 * times slower. With no decoder given, rows are decoded by the scalar {@link Dequantizer} into a
 * heap block, as before the vector decoders: the reference form that benchmarks compare against
 * ({@link CpuKernelContext#withReferenceDequantization}); the results are the same bits.
 *
 * <p>Decoding inside the tiles instead (no f32 block) was measured and left out: on JDK 25 the
 * tiles with 2 or 4 decoded rows exceed C2's inlining budget ({@code NodeCountInliningCutoff}) and
 * vectors carried through the nested loops get boxed, so they ran 2-7x slower than this at 4 and 16
 * tokens (docs/cpu-performance.md).
 */
final class QuantizedRows {
  /** Bytes of decoded rows held at once. */
  private static final int SCRATCH_BYTES = 64 * 1024;

  private QuantizedRows() {}

  /**
   * {@link RowKernel#rows} for quantized {@code w}, decoding with {@code decoder} (or the scalar
   * reference where null) and multiplying with the f32 kernel {@code f32}.
   */
  static void rows(
      QuantizedRowKernel decoder,
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
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment scratch =
          decoder != null
              ? arena.allocate((long) group * cols * 4, 64)
              : MemorySegment.ofArray(new byte[group * cols * 4]);
      float[] row = new float[cols];
      int[] shifted = new int[outOffsets.length];
      for (int g = r0; g < r1; g += group) {
        int n = Math.min(group, r1 - g);
        for (int i = 0; i < n; i++) {
          if (decoder != null) {
            decoder.decodeRow(w, g + i, row, 0);
          } else {
            Dequantizer.row(w, g + i, row, 0);
          }
          MemorySegment.copy(row, 0, scratch, Numerics.F32_LE, (long) i * cols * 4, cols);
        }
        for (int t = 0; t < shifted.length; t++) {
          shifted[t] = outOffsets[t] + g;
        }
        f32.rows(scratch, cols, 0, n, x, xOffsets, out, shifted);
      }
    }
  }
}
