package dev.ringmaster.cuda.kernels;

import dev.ringmaster.model.ModelLoadException;
import dev.ringmaster.model.weights.QuantizedTensor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * The device layout of NVFP4 codes and the host-side reordering that produces it at load time. A
 * checkpoint row holds element {@code 2i} in the low nibble of byte {@code i} and {@code 2i + 1} in
 * its high nibble; on the device each little-endian 32-bit word of a row (8 elements, {@code k0 ..
 * k0 + 7}) holds element {@code k0 + {0, 2, 4, 6, 1, 3, 5, 7}[s]} in nibble slot {@code s} (bits
 * {@code 4s .. 4s + 3}). Slots {@code p} and {@code p + 4} then hold the consecutive elements
 * {@code 2p, 2p + 1}, so one shift and two masks turn them into an f16 pair in k order ({@link
 * #f16PairBits}, the kernels' {@code e2m1_pair_f16x2}): the GEMVs multiply them with consecutive
 * activations and the tensor-core experts get consecutive bf16 pairs for their A fragments, with
 * the same 16-byte loads of 32 codes as the checkpoint order. Scales ({@code weight_scale}, e4m3
 * {@code [rows, cols / 16]}) and the global scales stay as stored.
 */
public final class Nvfp4Layout {
  /** Elements of one scale group. */
  public static final int GROUP = 16;

  /** The element (of a word's 8) that each nibble slot of a device word holds. */
  private static final int[] SLOT_ELEMENT = {0, 2, 4, 6, 1, 3, 5, 7};

  private static final ValueLayout.OfInt I32_LE =
      ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

  private Nvfp4Layout() {}

  /** A checkpoint-order word (8 codes, element {@code j} in slot {@code j}) in device order. */
  public static int toDeviceWord(int stored) {
    int out = 0;
    for (int s = 0; s < 8; s++) {
      out |= ((stored >>> (4 * SLOT_ELEMENT[s])) & 0xf) << (4 * s);
    }
    return out;
  }

  /** The inverse of {@link #toDeviceWord}. */
  public static int toStoredWord(int device) {
    int out = 0;
    for (int s = 0; s < 8; s++) {
      out |= ((device >>> (4 * s)) & 0xf) << (4 * SLOT_ELEMENT[s]);
    }
    return out;
  }

  /**
   * Reorders {@code bytes} bytes of packed codes at {@code offset} of {@code seg} in place from
   * checkpoint to device order; {@code bytes} is a multiple of 4 (rows of a multiple of 16 elements
   * are 8 bytes apart).
   */
  public static void toDeviceOrder(MemorySegment seg, long offset, long bytes) {
    if (bytes % 4 != 0) {
      throw new IllegalArgumentException("NVFP4 codes come in 4-byte words, got " + bytes);
    }
    for (long b = offset; b < offset + bytes; b += 4) {
      seg.set(I32_LE, b, toDeviceWord(seg.get(I32_LE, b)));
    }
  }

  /**
   * What {@code e2m1_pair_f16x2(word, p)} in {@code nvfp4_weights.cu} computes: the f16 bits of
   * elements {@code 2p} (low half) and {@code 2p + 1} (high half) of a device word, each {@code
   * e2m1 * 2^-14} exactly.
   */
  public static int f16PairBits(int deviceWord, int p) {
    int a = deviceWord << (12 - 4 * p);
    return (a & 0x80008000) | ((a >>> 3) & 0x0e000e00);
  }

  /**
   * Checks that a column slice starting at {@code c0} of {@code q} begins at a scale group (a
   * rank's share must not need a scale it shares with its neighbour).
   *
   * @throws ModelLoadException when it does not
   */
  public static void checkColumnCut(QuantizedTensor q, int c0) {
    if (c0 % GROUP != 0) {
      throw new ModelLoadException(
          q.weight().file()
              + ": NVFP4 tensor '"
              + q.weight().name()
              + "' ["
              + q.rows()
              + ", "
              + q.cols()
              + "]: this rank's shard would start at column "
              + c0
              + ", inside a 16-element scale group; choose a --tp-size that cuts this dimension"
              + " at multiples of 16");
    }
  }
}
