package dev.ringmaster.cuda.kernels;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringmaster.runtime.sampling.SamplingBatch;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The host side of device masks without a GPU: the packed slot indexes and 32-bit words read back
 * as the kernel reads them ({@code word[t / 32] >> (t % 32) & 1}) allow exactly the tokens the CPU
 * sampler's {@code long[]} masks allow; unmasked and padding rows take no slot; rows sharing a mask
 * share a slot; short masks disallow the rest; pending masks are waited for.
 */
class AllowedTokenMasksTest {
  private static final long CANARY = 0x5a5a5a5a5a5a5a5aL;

  private static void addRow(SamplingBatch b) {
    b.addRow(0.7f, 0, 1f, 0f, 1, 0, 1f, 0f, 0f, -1);
  }

  private static long[] randomMask(SplittableRandom r, int vocab) {
    long[] m = new long[(vocab + 63) / 64];
    for (int i = 0; i < m.length; i++) {
      m[i] = r.nextLong() & r.nextLong(); // about a quarter of the bits
    }
    return m;
  }

  private static boolean allowedByKernel(
      MemorySegment masks, long at, int stride, int slot, int t) {
    int word = masks.get(ValueLayout.JAVA_INT_UNALIGNED, at + 4L * ((long) slot * stride + t / 32));
    return ((word >>> (t % 32)) & 1) != 0;
  }

  private static boolean allowedByCpu(long[] mask, int t) {
    return t / 64 < mask.length && (mask[t / 64] & (1L << t)) != 0;
  }

  @ParameterizedTest
  @ValueSource(ints = {129_280, 1000, 64, 33, 1})
  void packedWordsAllowExactlyTheCpuMasksTokens(int vocab) {
    SplittableRandom r = new SplittableRandom(vocab);
    int rows = 9;
    long[][] masks = new long[rows][];
    SamplingBatch b = new SamplingBatch();
    for (int i = 0; i < rows; i++) {
      addRow(b);
      if (i % 3 != 1) {
        masks[i] = randomMask(r, vocab);
        b.setAllowedTokens(masks[i]);
      }
    }
    int stride = AllowedTokenMasks.strideWords(vocab);
    int padded = rows + 3;
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment index = arena.allocate(4L * padded + 8);
      MemorySegment words = arena.allocate(16 + 4L * padded * stride);
      words.fill((byte) 0x5a);
      int slots = new AllowedTokenMasks().pack(b, padded, index, 8, words, 16, stride);
      assertThat(slots).isEqualTo(6);
      for (int i = 0; i < padded; i++) {
        int slot = index.get(ValueLayout.JAVA_INT_UNALIGNED, 8 + 4L * i);
        if (i >= rows || masks[i] == null) {
          assertThat(slot).as("row %d has no mask", i).isEqualTo(-1);
          continue;
        }
        assertThat(slot).isBetween(0, slots - 1);
        for (int t = 0; t < vocab; t++) {
          assertThat(allowedByKernel(words, 16, stride, slot, t))
              .as("row %d token %d", i, t)
              .isEqualTo(allowedByCpu(masks[i], t));
        }
      }
      // Nothing written past the used slots.
      long end = 16 + 4L * slots * stride;
      if (end + 8 <= words.byteSize()) {
        assertThat(words.get(ValueLayout.JAVA_LONG_UNALIGNED, end)).isEqualTo(CANARY);
      }
    }
  }

  @Test
  void rowsSharingAMaskShareASlotAndEqualCopiesDoNot() {
    long[] shared = {0b1011L, 0L};
    long[] copy = shared.clone();
    SamplingBatch b = new SamplingBatch();
    for (long[] m : new long[][] {shared, copy, shared, null, shared}) {
      addRow(b);
      if (m != null) {
        b.setAllowedTokens(m);
      }
    }
    int stride = AllowedTokenMasks.strideWords(128);
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment index = arena.allocate(4L * 5);
      MemorySegment words = arena.allocate(4L * 5 * stride);
      assertThat(new AllowedTokenMasks().pack(b, 5, index, 0, words, 0, stride)).isEqualTo(2);
      assertThat(index.toArray(ValueLayout.JAVA_INT)).containsExactly(0, 1, 0, -1, 0);
    }
  }

  @Test
  void aShortMaskDisallowsTheTokensPastItsEnd() {
    SamplingBatch b = new SamplingBatch();
    addRow(b);
    b.setAllowedTokens(new long[] {-1L}); // tokens 0..63 only
    int vocab = 300;
    int stride = AllowedTokenMasks.strideWords(vocab);
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment index = arena.allocate(4);
      MemorySegment words = arena.allocate(4L * stride);
      words.fill((byte) 0xff);
      new AllowedTokenMasks().pack(b, 1, index, 0, words, 0, stride);
      for (int t = 0; t < vocab; t++) {
        assertThat(allowedByKernel(words, 0, stride, 0, t)).as("token %d", t).isEqualTo(t < 64);
      }
    }
  }

  @Test
  void aPendingMaskIsWaitedForBeforeItIsCopied() throws Exception {
    CompletableFuture<long[]> pending = new CompletableFuture<>();
    SamplingBatch b = new SamplingBatch();
    addRow(b);
    b.setAllowedTokens(pending);
    int stride = AllowedTokenMasks.strideWords(64);
    try (Arena arena = Arena.ofShared()) {
      MemorySegment index = arena.allocate(4);
      MemorySegment words = arena.allocate(4L * stride);
      CompletableFuture<Integer> packed =
          CompletableFuture.supplyAsync(
              () -> new AllowedTokenMasks().pack(b, 1, index, 0, words, 0, stride));
      Thread.sleep(50);
      assertThat(packed).as("packing waits for the mask thread").isNotDone();
      pending.complete(new long[] {1L << 42});
      assertThat(packed.get()).isEqualTo(1);
      assertThat(words.get(ValueLayout.JAVA_INT_UNALIGNED, 4)).isEqualTo(1 << 10);
      assertThat(words.get(ValueLayout.JAVA_INT_UNALIGNED, 0)).isZero();
    }
  }

  @Test
  void strideIsWholeLongWordsAndTooFewSlotsAreRefused() {
    assertThat(AllowedTokenMasks.strideWords(129_280)).isEqualTo(4040);
    assertThat(AllowedTokenMasks.strideWords(65)).isEqualTo(4);
    assertThat(AllowedTokenMasks.strideWords(0)).isZero();
    SamplingBatch b = new SamplingBatch();
    addRow(b);
    b.setAllowedTokens(new long[] {1L});
    addRow(b);
    b.setAllowedTokens(new long[] {2L});
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment index = arena.allocate(8);
      MemorySegment words = arena.allocate(8); // one slot of 2 words
      assertThatThrownBy(() -> new AllowedTokenMasks().pack(b, 2, index, 0, words, 0, 2))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("mask slots");
      assertThatThrownBy(() -> new AllowedTokenMasks().pack(b, 2, index, 0, words, 0, 3))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("64-bit words");
    }
  }
}
