package dev.ringmaster.cuda.model;

import dev.ringmaster.model.ModelLoadException;
import dev.ringmaster.model.weights.QuantizedTensor;

/**
 * Where the block scales of a slice of a DeepSeek FP8 matrix lie ({@code weight_scale_inv}, f32
 * {@code [ceil(rows/128), ceil(cols/128)]}), and the refusal of slices that would cut a 128x128
 * block: a rank's rows or columns must start at a multiple of 128 (a slice may end in the matrix's
 * last, partial block).
 */
final class Fp8BlockLayout {
  /** Rows and columns of one scale block. */
  static final int BLOCK = 128;

  private Fp8BlockLayout() {}

  /** Scale blocks covering {@code n} rows or columns. */
  static int blocks(int n) {
    return (n + BLOCK - 1) / BLOCK;
  }

  /**
   * The scale rows {@code [first, first + count)} of rows {@code [r0, r0 + rn)} of {@code q}, as
   * {@code {first, count}}.
   *
   * @throws ModelLoadException when {@code r0} is inside a block
   */
  static int[] scaleRows(QuantizedTensor q, int r0, int rn) {
    checkCut(q, "row", r0);
    return new int[] {r0 / BLOCK, blocks(rn)};
  }

  /** The scale columns of columns {@code [c0, c0 + cn)} of {@code q}, as {@code {first, count}}. */
  static int[] scaleCols(QuantizedTensor q, int c0, int cn) {
    checkCut(q, "column", c0);
    return new int[] {c0 / BLOCK, blocks(cn)};
  }

  /**
   * The scale row that row {@code g} of a stack of parts of {@code partRows} rows each (each part
   * quantized on its own) reads: what {@code fp8_scale_row} in {@code fp8_weights.cu} computes.
   */
  static long scaleRowOf(long g, int partRows) {
    return (g / partRows) * blocks(partRows) + (g % partRows) / BLOCK;
  }

  private static void checkCut(QuantizedTensor q, String dim, int at) {
    if (at % BLOCK != 0) {
      throw new ModelLoadException(
          q.weight().file()
              + ": tensor '"
              + q.weight().name()
              + "' ["
              + q.rows()
              + ", "
              + q.cols()
              + "]: this rank's shard would start at "
              + dim
              + " "
              + at
              + ", inside an FP8 128x128 scale block; choose a --tp-size that cuts this"
              + " dimension at multiples of 128");
    }
  }
}
