package dev.ringmaster.backend.cpu;

import java.lang.foreign.MemorySegment;

/**
 * A matmul kernel specialised for one weight dtype and one vector width (see {@link RowKernels}).
 * Implementations are stateless and safe to call from several threads at once.
 */
interface RowKernel {
  /**
   * Computes {@code out[outOffsets[t] + r] = sum_c x[xOffsets[t] + c] * W[r][c]} for rows {@code r0
   * <= r < r1} of the matrix and every token {@code t < xOffsets.length}.
   *
   * @param w the weight elements, row-major, {@code cols} per row
   * @param cols elements per weight row
   * @param r0 first row, inclusive
   * @param r1 last row, exclusive
   * @param x token inputs
   * @param xOffsets where each token's {@code cols} inputs start in {@code x}
   * @param out outputs
   * @param outOffsets where each token's output row starts in {@code out} (row r goes to + r)
   */
  void rows(
      MemorySegment w,
      int cols,
      int r0,
      int r1,
      float[] x,
      int[] xOffsets,
      float[] out,
      int[] outOffsets);

  /**
   * As {@link #rows}, for a bf16 matrix of {@code rows x cols} in {@link PackedBf16}'s layout for
   * this kernel's {@link #lanes}: each output is the fused multiply-add chain of its row over the
   * columns in order, whatever the tokens, tiles or rows asked for. {@code r0} must be a multiple
   * of the lanes, {@code r1} one too or {@code rows}.
   */
  void packedRows(
      MemorySegment packed,
      int rows,
      int cols,
      int r0,
      int r1,
      float[] x,
      int[] xOffsets,
      float[] out,
      int[] outOffsets);

  /**
   * Converts {@code count} consecutive elements starting at element {@code index} of {@code src} to
   * f32, exactly.
   */
  void toFloats(MemorySegment src, long index, float[] dst, int dstOffset, int count);

  /** Lanes per float vector. */
  int lanes();
}
