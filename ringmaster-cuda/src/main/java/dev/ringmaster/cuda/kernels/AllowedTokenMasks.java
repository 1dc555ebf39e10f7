package dev.ringmaster.cuda.kernels;

import dev.ringmaster.runtime.sampling.SamplingBatch;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.IdentityHashMap;

/**
 * Packs a step's allowed-token masks into the layout {@code rm_sample_rows} reads: per row an i32
 * slot index ({@code -1}: no mask, the kernel reads no mask word for it), and per slot one bitset
 * of {@code strideWords} 32-bit words (bit {@code t % 32} of word {@code t / 32}). Only masked rows
 * take a slot, and rows that share one mask array (a constraint's cached mask of one state) share
 * one slot, so a step copies {@code slots * strideWords * 4} bytes of masks.
 *
 * <p>A {@link SamplingBatch} mask is a {@code long[]} with bit {@code t % 64} of word {@code t /
 * 64}; on a little-endian host its bytes are already the 32-bit layout, so each mask is one bulk
 * copy. Tokens past the end of a mask array are not allowed (as in the CPU sampler): the rest of
 * its slot is zeroed. Reading a row's mask waits for it when a mask thread still computes it, so a
 * mask is complete before its bytes reach the staging memory. Not thread-safe.
 */
public final class AllowedTokenMasks {
  private final IdentityHashMap<long[], Integer> slotOf = new IdentityHashMap<>();

  /** Words per slot for vocabularies up to {@code vocab} (even, so 64-bit words fit whole). */
  public static int strideWords(int vocab) {
    if (vocab < 0) {
      throw new IllegalArgumentException("vocab must be >= 0, got " + vocab);
    }
    return 2 * (int) ((vocab + 63L) / 64);
  }

  /**
   * Writes rows {@code [0, rows)} of {@code batch} into {@code slotIndex} (i32 per row at {@code
   * indexAt}; rows past {@code batch.rows()} are padding, {@code -1}) and their masks into {@code
   * masks} (slot {@code s} at {@code masksAt + 4 * s * strideWords}).
   *
   * @return the number of slots written (0 when no row is masked)
   * @throws IllegalArgumentException when {@code masks} holds fewer slots than the masks need
   */
  public int pack(
      SamplingBatch batch,
      int rows,
      MemorySegment slotIndex,
      long indexAt,
      MemorySegment masks,
      long masksAt,
      int strideWords) {
    if ((strideWords & 1) != 0) {
      throw new IllegalArgumentException("mask slots hold whole 64-bit words, got " + strideWords);
    }
    long slotBytes = 4L * strideWords;
    int longs = strideWords / 2;
    int slots = 0;
    slotOf.clear();
    for (int r = 0; r < rows; r++) {
      long[] mask =
          r < batch.rows() && batch.hasAllowedTokenMasks() ? batch.allowedTokens(r) : null;
      int slot = -1;
      if (mask != null) {
        Integer shared = slotOf.get(mask);
        if (shared != null) {
          slot = shared;
        } else {
          slot = slots++;
          long at = masksAt + slot * slotBytes;
          if (at + slotBytes > masks.byteSize()) {
            throw new IllegalArgumentException(
                "the step's masks need more than the "
                    + (masks.byteSize() - masksAt) / Math.max(1, slotBytes)
                    + " mask slots of the sampling buffers");
          }
          int n = Math.min(mask.length, longs);
          MemorySegment.copy(mask, 0, masks, ValueLayout.JAVA_LONG_UNALIGNED, at, n);
          if (n < longs) {
            masks.asSlice(at + 8L * n, 8L * (longs - n)).fill((byte) 0);
          }
          slotOf.put(mask, slot);
        }
      }
      slotIndex.set(ValueLayout.JAVA_INT_UNALIGNED, indexAt + 4L * r, slot);
    }
    slotOf.clear();
    return slots;
  }
}
