package dev.ringmaster.cuda.kernels;

import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.Kernel;
import java.util.function.BiFunction;

/**
 * MLA decode attention of a few tokens in one launch ({@code mla_decode_fused.cu}): query
 * absorption, flash-decoding over the paged latent cache in {@value #SPLITS} splits, their combine
 * and the value projection, by a thread-block cluster of {@value #SPLITS} blocks per (token, head)
 * that exchange their pieces through distributed shared memory. Replaces {@link
 * MlaKernels#mlaAttention}'s four launches (absorb, split, combine, out_v), whose fixed costs
 * dominate at batch 1; the same math in f32, sums in other orders, so equal within rounding. Its
 * {@value #SPLITS} splits suit short and medium contexts: each block walks {@code len / 8}
 * positions, so very long contexts at batch 1 are better spread by the separate kernels.
 */
public final class MlaFusedDecode {
  /** Blocks per (token, head): the cluster size and the number of KV splits. */
  public static final int SPLITS = 8;

  /**
   * Most tokens of one sequence in a step that {@link Append}s (kMlaFusedMaxNew): the rows a token
   * must build itself, its own and those of the step's tokens before it in its sequence.
   */
  public static final int MAX_APPEND_ROWS = 8;

  private final Kernel fused;

  MlaFusedDecode(BiFunction<String, Integer, Kernel> kernel) {
    fused = kernel.apply("rm_mla_decode_fused", 23);
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
   * MlaKernels#mlaAttention}), through {@code kvB [heads * (nope + vDim), kvLora]} (bf16). {@code
   * append}: null when the cache already holds every token's row, else the rows to append first
   * (and {@code q}'s rotary part still unrotated).
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
      float scale,
      Append append) {
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
    if (append == null) {
      fused.arg(14, 0L).arg(15, 0).arg(16, 0L).arg(17, 0f).arg(18, 0L).arg(19, 0f).arg(20, 0);
      fused.arg(21, 0L).arg(22, 0L);
    } else {
      fused.arg(14, append.kv()).arg(15, append.kvStride()).arg(16, append.kvNorm());
      fused.arg(17, append.eps()).arg(18, append.invFreq()).arg(19, append.attnScaling());
      fused.arg(20, append.interleaved() ? 1 : 0).arg(21, cache).arg(22, append.slots());
    }
    fused.launch(s, SPLITS, heads, t, 256, 0);
  }

  /**
   * The step's new cache rows, for {@link #attention} to build and append itself instead of {@link
   * MlaKernels#mlaKvRopeAppend} (same arguments): {@code kv [t, kvStride]} holds each token's
   * latent then its unrotated rotary key (kv_a's output), normalised with {@code kvNorm} and {@code
   * eps}, rotated at the token's position ({@code invFreq}, {@code attnScaling}, {@code
   * interleaved}) and written at {@code slots[i]}. The query's rotary part is then read unrotated.
   * A token cannot read from the cache the rows this launch writes: its own, and in a verify pass
   * those of the step's tokens before it in its sequence, which it builds from {@code kv} as well.
   * It finds them as the tokens just before it with its sequence and the positions just before its
   * own, so each sequence's tokens must be consecutive in the step, at consecutive positions, at
   * most {@link #MAX_APPEND_ROWS} of them (the caller's to ensure: a longer run would read rows
   * another block is still writing).
   */
  public record Append(
      long kv,
      int kvStride,
      long kvNorm,
      float eps,
      long invFreq,
      float attnScaling,
      boolean interleaved,
      long slots) {}
}
