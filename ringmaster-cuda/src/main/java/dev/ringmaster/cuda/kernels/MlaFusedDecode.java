package dev.ringmaster.cuda.kernels;

import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.Kernel;
import java.util.function.BiFunction;

/**
 * MLA decode attention of a few tokens in one launch ({@code mla_decode_fused.cu}): query
 * absorption, flash-decoding over the paged latent cache in {@value #SPLITS} splits, their combine
 * and the value projection, by a thread-block cluster of {@value #SPLITS} blocks per (token, head)
 * that exchange their pieces through distributed shared memory. Replaces {@link
 * RingmasterKernels#mlaAttention}'s four launches (absorb, split, combine, out_v), whose fixed
 * costs dominate at batch 1; the same math in f32, sums in other orders, so equal within rounding.
 * Its {@value #SPLITS} splits suit short and medium contexts: each block walks {@code len / 8}
 * positions, so very long contexts at batch 1 are better spread by the separate kernels.
 */
public final class MlaFusedDecode {
  /** Blocks per (token, head): the cluster size and the number of KV splits. */
  public static final int SPLITS = 8;

  private final Kernel fused;

  MlaFusedDecode(BiFunction<String, Integer, Kernel> kernel) {
    fused = kernel.apply("rm_mla_decode_fused", 14);
  }

  /**
   * Whether the kernel takes this MLA shape: a 512-dim latent (8 splits of 64 columns), a rotary
   * part of at most 64 dims, and no-rope query and value heads of at most 256, all multiples of 8
   * (DeepSeek-V2/V3: 128 / 64 / 128 / 512).
   */
  public static boolean supports(int nope, int ropeDim, int vDim, int kvLora) {
    return kvLora == 512
        && ropeDim > 0
        && ropeDim <= 64
        && ropeDim % 8 == 0
        && nope > 0
        && nope <= 256
        && nope % 8 == 0
        && vDim > 0
        && vDim <= 256
        && vDim % 8 == 0;
  }

  /**
   * {@code out [t, heads * vDim]} = attention of {@code t} query tokens: {@code q [t, heads, nope +
   * ropeDim]} (rotary part already rotated) against the cached positions {@code 0 .. tokenPos[i]}
   * of sequence {@code tokenSeq[i]} through {@code blockTable} (the arguments of {@link
   * RingmasterKernels#mlaAttention}), through {@code kvB [heads * (nope + vDim), kvLora]} (bf16).
   */
  public void attention(
      CudaStream s,
      long out,
      long q,
      long kvB,
      long cache,
      long blockTable,
      int maxBlocksPerSeq,
      long tokenSeq,
      long tokenPos,
      int t,
      int heads,
      int nope,
      int ropeDim,
      int vDim,
      int kvLora,
      int blockSize,
      float scale) {
    if (!supports(nope, ropeDim, vDim, kvLora)) {
      throw new IllegalArgumentException(
          "fused MLA decode takes kvLora 512 and rope/nope/v dims of at most 64/256/256 (multiples"
              + " of 8), not "
              + kvLora
              + "/"
              + ropeDim
              + "/"
              + nope
              + "/"
              + vDim);
    }
    if (t < 1 || heads < 1) {
      throw new IllegalArgumentException(t + " tokens of " + heads + " heads");
    }
    fused.arg(0, out).arg(1, q).arg(2, kvB).arg(3, cache).arg(4, blockTable);
    fused.arg(5, maxBlocksPerSeq).arg(6, tokenSeq).arg(7, tokenPos).arg(8, heads).arg(9, nope);
    fused.arg(10, ropeDim).arg(11, vDim).arg(12, blockSize).arg(13, scale);
    fused.launch(s, SPLITS, heads, t, 256, 0);
  }
}
