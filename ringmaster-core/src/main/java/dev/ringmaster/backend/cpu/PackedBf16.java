package dev.ringmaster.backend.cpu;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * The layout the bf16 matmul kernels read: rows in blocks of one vector's lanes, and within a block
 * the columns in pairs, one 32-bit word per (row, column pair) holding column {@code 2p} in its low
 * half and column {@code 2p + 1} in its high half. Block {@code b}, pair {@code p}, lane {@code i}
 * (row {@code b * lanes + i}) is the int at index {@code (b * pairs + p) * lanes + i}, where {@code
 * pairs = ceil(cols / 2)}. Rows past the end of the last block and the missing high half of an odd
 * last column are zero.
 *
 * <p>Why: one vector load then gives the weights of one column pair for a whole block of rows, and
 * a shift (even column) or a mask (odd column) turns them into f32 exactly. Each lane accumulates
 * its own row, so every output is a plain fused multiply-add chain over its columns in order, with
 * no reduction across lanes: the result is the same for any number of tokens, any tile and any
 * split of the rows, and no horizontal sums end a tile.
 */
final class PackedBf16 {
  private static final ValueLayout.OfShort I16 =
      ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
  private static final ValueLayout.OfInt I32 =
      ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

  private PackedBf16() {}

  /** Column pairs of a row of {@code cols} columns. */
  static int pairs(int cols) {
    return (cols + 1) / 2;
  }

  /** Blocks of {@code lanes} rows covering {@code rows} rows. */
  static int blocks(int rows, int lanes) {
    return (rows + lanes - 1) / lanes;
  }

  /**
   * A packed copy of the row-major bf16 matrix {@code data} ({@code rows x cols}) for vectors of
   * {@code lanes} floats, in memory the garbage collector frees with the last reference to it.
   */
  static MemorySegment pack(MemorySegment data, int rows, int cols, int lanes) {
    int pairs = pairs(cols);
    long words = (long) blocks(rows, lanes) * pairs * lanes;
    MemorySegment packed = Arena.ofAuto().allocate(words * 4, 64);
    long rowBytes = 2L * cols;
    for (int r = 0; r < rows; r++) {
      long src = r * rowBytes;
      long dst = ((long) (r / lanes) * pairs * lanes + r % lanes) * 4;
      for (int p = 0; p < pairs; p++) {
        int lo = data.get(I16, src + 4L * p) & 0xffff;
        int hi = 2 * p + 1 < cols ? data.get(I16, src + 4L * p + 2) & 0xffff : 0;
        packed.set(I32, dst + 4L * lanes * p, lo | hi << 16);
      }
    }
    return packed;
  }
}
