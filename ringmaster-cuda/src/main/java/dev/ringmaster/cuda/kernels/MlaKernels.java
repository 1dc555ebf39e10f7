package dev.ringmaster.cuda.kernels;

import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.Kernel;
import dev.ringmaster.runtime.KernelTuning;
import java.util.function.BiFunction;

/**
 * Typed launches of the multi-head latent attention kernels: the fused latent norm + rotary + cache
 * append, absorbed decode attention over the paged latent cache (split over positions, on CUDA or
 * tensor cores, then combined), and the pieces of expanded prefill attention. Part of {@link
 * RingmasterKernels}, which loads them; use from the GPU's thread only.
 */
public final class MlaKernels {
  private final Kernel mlaAbsorbQ;
  private final Kernel mlaOutV;
  private final Kernel mlaAppend;
  private final Kernel mlaKvRopeAppend;
  private final Kernel mlaSplit;
  private final Kernel mlaCombine;
  private final Kernel mlaSplitMma;
  private final Kernel mlaSplitMma2;
  private final Kernel mlaSparseMma;
  private final Kernel mlaSparseMma2;
  private final Kernel mlaGatherCtx;
  private final Kernel mlaPrefillSoftmax;
  private boolean mlaTensorCores;
  private int mlaStages;
  // Per cache-tile stage count (index 1 or 2): the shared memory granted / refused so far.
  private final int[] mmaSharedGranted = new int[3];
  private final int[] mmaSharedRefused = {0, Integer.MAX_VALUE, Integer.MAX_VALUE};

  /** Fewest positions per split of the tensor-core decode kernel (one tile). */
  public static final int MLA_MMA_MIN_CHUNK = 32;

  MlaKernels(BiFunction<String, Integer, Kernel> kernel, KernelTuning tuning) {
    mlaAbsorbQ = kernel.apply("rm_mla_absorb_q", 9);
    mlaOutV = kernel.apply("rm_mla_out_v", 8);
    mlaAppend = kernel.apply("rm_mla_cache_append", 5);
    mlaKvRopeAppend = kernel.apply("rm_mla_kv_rope_append", 17);
    mlaSplit = kernel.apply("rm_mla_decode_split", 15);
    mlaCombine = kernel.apply("rm_mla_combine", 8);
    mlaSplitMma = kernel.apply("rm_mla_decode_split_mma", 17);
    mlaSplitMma2 = kernel.apply("rm_mla_decode_split_mma2", 17);
    mlaSparseMma = kernel.apply("rm_mla_sparse_split_mma", 19);
    mlaSparseMma2 = kernel.apply("rm_mla_sparse_split_mma2", 19);
    mlaGatherCtx = kernel.apply("rm_mla_gather_ctx", 5);
    mlaPrefillSoftmax = kernel.apply("rm_mla_prefill_softmax", 7);
    useMlaTensorCores(tuning.mlaTensorCores());
    useMlaStages(tuning.mlaStages());
  }

  /**
   * MLA's steps between projections and attention for {@code n} tokens in one launch: the KV latent
   * {@code kv[t, 0:kvLora]} normalised (weight {@code kvNorm}), the shared rotary key {@code kv[t,
   * kvLora:]} and each of {@code heads} rotary queries at {@code q[t, h*qk + nope]} rotated, and
   * the token's latent and key appended to {@code cache} at {@code slots[t]}; as {@link
   * RingmasterKernels#rmsNorm}, {@link RingmasterKernels#rope} twice and {@link #mlaCacheAppend}
   * leave them.
   */
  public void mlaKvRopeAppend(
      CudaStream s,
      long kv,
      int kvStride,
      long kvNorm,
      float eps,
      int kvLora,
      int ropeDim,
      long q,
      int qStride,
      int heads,
      int qk,
      int nope,
      long positions,
      long invFreq,
      float attnScaling,
      boolean interleaved,
      long cache,
      long slots,
      int n) {
    int threads = 256;
    int half = ropeDim / 2;
    if (half < 1 || half > threads) {
      throw new IllegalArgumentException("rotary dims must be in [2, 512], got " + ropeDim);
    }
    int headsPerBlock = threads / half;
    Kernel f = mlaKvRopeAppend;
    f.arg(0, kv).arg(1, kvStride).arg(2, kvNorm).arg(3, eps).arg(4, kvLora).arg(5, ropeDim);
    f.arg(6, q).arg(7, qStride).arg(8, heads).arg(9, qk).arg(10, nope).arg(11, positions);
    f.arg(12, invFreq).arg(13, attnScaling).arg(14, interleaved ? 1 : 0).arg(15, cache);
    f.arg(16, slots).launch(s, n, (heads + 1 + headsPerBlock - 1) / headsPerBlock, 1, threads, 0);
  }

  /** Writes {@code n} new tokens' latent + rotary key rows of {@code kv} into their cache slots. */
  public void mlaCacheAppend(
      CudaStream s, long cache, long kv, int kvStride, long slots, int n, int d) {
    mlaAppend.arg(0, cache).arg(1, kv).arg(2, kvStride).arg(3, slots).arg(4, d);
    mlaAppend.launch(s, n, 1, 1, 256, 0);
  }

  /**
   * KV splits for {@code tokens} queries of at most {@code maxLen} positions on {@code sms} SMs: at
   * most enough blocks (16 heads each on the tensor-core path) for two per SM, the tensor-core
   * kernel's residency (one H200, batch 32 at context 640: 8 splits 69 us, 17 splits 117 us; more
   * splits re-read each token's queries and write more partials), but no split shorter than 32
   * positions. The tensor-core kernel also never gives a split fewer than {@link
   * #MLA_MMA_MIN_CHUNK} positions, so splits a graph captured for a long nominal context stay cheap
   * when the real context is short (the surplus ones are empty).
   */
  public static int mlaSplits(int tokens, int heads, int maxLen, int sms, int maxSplits) {
    int headBlocks = (heads + 15) / 16;
    // Rounded down: one more split can push the grid past one wave (batch 32, context 640: 9
    // splits = 288 blocks for 264 slots, 72.7 us; 8 splits 56.6 us).
    int wanted = 2 * sms / (headBlocks * tokens);
    int byLength = (maxLen + 31) / 32;
    return Math.max(1, Math.min(Math.min(wanted, byLength), maxSplits));
  }

  /**
   * Chooses the tensor-core decode kernel (default, where the shape allows) or the CUDA-core one;
   * both compute the same split partials; the constructor's tuning sets it ({@code
   * mla-tensor-cores}). For tests and benchmarks.
   */
  public void useMlaTensorCores(boolean on) {
    mlaTensorCores = on;
  }

  /**
   * Cache tiles in flight per block of the tensor-core decode kernel: 1 (one tile's copy at a time,
   * two blocks per SM) or 2 (the next tile copies while this one is computed, one block per SM).
   * The constructor's tuning sets it ({@code mla-stages}, default 1). For benchmarks and tests.
   */
  public void useMlaStages(int stages) {
    if (stages != 1 && stages != 2) {
      throw new IllegalArgumentException("MLA decode stages must be 1 or 2, not " + stages);
    }
    mlaStages = stages;
  }

  /** Cache tiles in flight per block of the tensor-core decode kernel (1 or 2). */
  public int mlaStages() {
    return mlaStages;
  }

  /** Whether split attention for latent rank {@code kvLora} runs on tensor cores. */
  public boolean mlaUsesTensorCores(int kvLora, int ropeDim) {
    return mlaTensorCores
        && kvLora % 16 == 0
        && ropeDim % 16 == 0
        && mmaSharedAllowed(mlaStages, mlaMmaSharedBytes(kvLora, ropeDim, mlaStages));
  }

  /** Raises the tensor-core kernel's shared-memory limit once; false where the GPU has less. */
  private boolean mmaSharedAllowed(int stages, int bytes) {
    if (bytes <= mmaSharedGranted[stages]) {
      return true;
    }
    if (bytes >= mmaSharedRefused[stages]) {
      return false;
    }
    try {
      mlaSplitKernel(stages).maxDynamicSharedBytes(bytes);
      (stages == 2 ? mlaSparseMma2 : mlaSparseMma).maxDynamicSharedBytes(bytes);
      mmaSharedGranted[stages] = bytes;
      return true;
    } catch (RuntimeException tooMuch) {
      mmaSharedRefused[stages] = bytes;
      return false;
    }
  }

  private Kernel mlaSplitKernel(int stages) {
    return stages == 2 ? mlaSplitMma2 : mlaSplitMma;
  }

  private static int mlaMmaSharedBytes(int kvLora, int ropeDim, int stages) {
    // Mirrors MlaMmaSmem in mla_mma.cu: q and `stages` k tiles (bf16, row stride D + 8), two
    // partial score tiles and the probabilities, the f32 context, three per-head values; parts
    // 128-byte aligned.
    int ldq = kvLora + ropeDim + 8;
    int bytes = up128(16 * ldq * 2) + stages * up128(32 * ldq * 2) + up128(2 * 16 * 36 * 4);
    bytes += up128(16 * 40 * 2) + up128(16 * (kvLora + 4) * 4);
    return bytes + 3 * 16 * 4;
  }

  private static int up128(int b) {
    return (b + 127) & ~127;
  }

  /**
   * Absorbed MLA attention for {@code t} query tokens over the paged latent cache: {@code q [t, H,
   * nope+rope]} (rotary part already rotated) gives {@code out [t, H, vDim]}. Each token attends to
   * positions {@code 0 .. tokenPos[t]} of sequence {@code tokenSeq[t]}, whose cache blocks are row
   * {@code tokenSeq[t]} of {@code blockTable [S, maxBlocksPerSeq]}. {@code kvB} is {@code
   * kv_b_proj}'s bf16 weight {@code [H*(nope+vDim), kvLora]}.
   */
  public void mlaAttention(
      CudaStream s,
      MlaWorkspace ws,
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
      int splits,
      float scale) {
    mlaAbsorb(s, ws, q, kvB, t, heads, nope, ropeDim, vDim, kvLora);
    mlaSplitAttention(
        s,
        ws,
        cache,
        blockTable,
        maxBlocksPerSeq,
        tokenSeq,
        tokenPos,
        0,
        t,
        heads,
        ropeDim,
        kvLora,
        blockSize,
        splits,
        scale);
    mlaOutV(s, ws, out, kvB, t, heads, nope, vDim, kvLora);
  }

  /**
   * First step of {@link #mlaAttention}: the absorbed queries of {@code t} tokens into {@code ws}.
   */
  public void mlaAbsorb(
      CudaStream s,
      MlaWorkspace ws,
      long q,
      long kvB,
      int t,
      int heads,
      int nope,
      int ropeDim,
      int vDim,
      int kvLora) {
    mlaAbsorbRange(s, ws, q, kvB, 0, t, heads, nope, ropeDim, vDim, kvLora);
  }

  /**
   * {@link #mlaAbsorb} for tokens {@code first .. first+count-1} of the step only: reads their rows
   * of {@code q [tokens, H, nope+rope]} and writes their rows of the workspace's absorbed queries;
   * the other rows are left alone. A token's values do not depend on the range it is launched in
   * (each is computed alone in a fixed order), so they equal what the whole-step launch gives it.
   */
  public void mlaAbsorbRange(
      CudaStream s,
      MlaWorkspace ws,
      long q,
      long kvB,
      int first,
      int count,
      int heads,
      int nope,
      int ropeDim,
      int vDim,
      int kvLora) {
    checkRange(ws, first, count);
    long qRow = (long) heads * (nope + ropeDim);
    long latentRow = (long) heads * (kvLora + ropeDim);
    long qOut = ws.qLatent.ptr() + 4L * first * latentRow;
    mlaAbsorbQ.arg(0, qOut).arg(1, q + 4L * first * qRow).arg(2, kvB).arg(3, heads).arg(4, nope);
    // Both projections take 8 tokens per block (see mla_attention.cu for the thread mapping).
    mlaAbsorbQ.arg(5, ropeDim).arg(6, vDim).arg(7, kvLora).arg(8, count);
    mlaAbsorbQ.launch(s, heads, (kvLora + 127) / 128, (count + 7) / 8, 256, 0);
  }

  private static void checkRange(MlaWorkspace ws, int first, int count) {
    if (first < 0 || count < 1 || (long) first + count > ws.maxTokens) {
      throw new IllegalArgumentException(
          "tokens "
              + first
              + " .. "
              + ((long) first + count - 1)
              + " are outside the workspace's "
              + ws.maxTokens);
    }
  }

  /**
   * Split attention and combine for {@code count} of the absorbed queries in {@code ws}: the tokens
   * listed in {@code tokenList} (device ints), or tokens {@code 0 .. count-1} when it is 0. Writes
   * their latent context rows of {@code ws}.
   */
  public void mlaSplitAttention(
      CudaStream s,
      MlaWorkspace ws,
      long cache,
      long blockTable,
      int maxBlocksPerSeq,
      long tokenSeq,
      long tokenPos,
      long tokenList,
      int count,
      int heads,
      int ropeDim,
      int kvLora,
      int blockSize,
      int splits,
      float scale) {
    if (count > ws.maxTokens
        || splits > ws.maxSplits
        || (long) count * splits > ws.maxTokenSplits) {
      throw new IllegalArgumentException(
          count + " tokens / " + splits + " splits exceed the workspace");
    }
    if (mlaUsesTensorCores(kvLora, ropeDim)) {
      int smem = mlaMmaSharedBytes(kvLora, ropeDim, mlaStages);
      Kernel split = mlaSplitKernel(mlaStages);
      split.arg(0, ws.partialCtx.ptr()).arg(1, ws.partialMax.ptr());
      split.arg(2, ws.partialSum.ptr()).arg(3, ws.qLatent.ptr()).arg(4, cache);
      split.arg(5, blockTable).arg(6, maxBlocksPerSeq).arg(7, tokenSeq).arg(8, tokenPos);
      split.arg(9, tokenList).arg(10, heads).arg(11, kvLora).arg(12, ropeDim);
      split.arg(13, blockSize).arg(14, splits).arg(15, MLA_MMA_MIN_CHUNK).arg(16, scale);
      split.launch(s, (heads + 15) / 16, splits, count, 256, smem);
    } else {
      if (tokenList != 0) {
        throw new IllegalArgumentException("the CUDA-core split kernel takes no token list");
      }
      mlaSplit.arg(0, ws.partialCtx.ptr()).arg(1, ws.partialMax.ptr());
      mlaSplit.arg(2, ws.partialSum.ptr()).arg(3, ws.qLatent.ptr()).arg(4, cache);
      mlaSplit.arg(5, blockTable).arg(6, maxBlocksPerSeq).arg(7, tokenSeq).arg(8, tokenPos);
      mlaSplit.arg(9, heads).arg(10, kvLora).arg(11, ropeDim);
      mlaSplit.arg(12, blockSize).arg(13, splits).arg(14, scale);
      mlaSplit.launch(s, (heads + 7) / 8, splits, count, 256, 0);
    }
    mlaCombine(s, ws, tokenList, count, heads, kvLora, splits);
  }

  /**
   * {@link #mlaSplitAttention} over selections, on tensor cores ({@link #mlaUsesTensorCores} must
   * hold): token {@code t} of {@code 0 .. count-1} attends to the positions {@code sel[t, 0:n)}, n
   * = min(tokenPos[t] + 1, topK), of its sequence (DeepSeek Sparse Attention; the list as the
   * indexer's top-k writes it). Splits cover entries of the list. Writes the tokens' latent context
   * rows of {@code ws}.
   */
  public void mlaSparseSplitAttention(
      CudaStream s,
      MlaWorkspace ws,
      long cache,
      long blockTable,
      int maxBlocksPerSeq,
      long tokenSeq,
      long tokenPos,
      long sel,
      int topK,
      int count,
      int heads,
      int ropeDim,
      int kvLora,
      int blockSize,
      int splits,
      float scale) {
    if (!mlaUsesTensorCores(kvLora, ropeDim)) {
      throw new IllegalStateException(
          "sparse MLA on tensor cores needs kv_lora_rank and qk_rope_head_dim multiples of 16"
              + " and mla-tensor-cores on");
    }
    if (count > ws.maxTokens
        || splits > ws.maxSplits
        || (long) count * splits > ws.maxTokenSplits) {
      throw new IllegalArgumentException(
          count + " tokens / " + splits + " splits exceed the workspace");
    }
    int smem = mlaMmaSharedBytes(kvLora, ropeDim, mlaStages);
    Kernel k = mlaStages == 2 ? mlaSparseMma2 : mlaSparseMma;
    k.arg(0, ws.partialCtx.ptr()).arg(1, ws.partialMax.ptr()).arg(2, ws.partialSum.ptr());
    k.arg(3, ws.qLatent.ptr()).arg(4, cache).arg(5, blockTable).arg(6, maxBlocksPerSeq);
    k.arg(7, tokenSeq).arg(8, tokenPos).arg(9, 0L).arg(10, sel).arg(11, topK).arg(12, heads);
    k.arg(13, kvLora).arg(14, ropeDim).arg(15, blockSize).arg(16, splits);
    k.arg(17, MLA_MMA_MIN_CHUNK).arg(18, scale);
    k.launch(s, (heads + 15) / 16, splits, count, 256, smem);
    mlaCombine(s, ws, 0, count, heads, kvLora, splits);
  }

  /**
   * The second launch of {@link #mlaSplitAttention}: merges the split partials in {@code ws} into
   * the latent context rows of {@code count} tokens (listed in {@code tokenList}, or 0 .. count-1).
   * Public so that benchmarks can time it alone.
   */
  public void mlaCombine(
      CudaStream s, MlaWorkspace ws, long tokenList, int count, int heads, int kvLora, int splits) {
    mlaCombine.arg(0, ws.ctx.ptr()).arg(1, ws.partialCtx.ptr()).arg(2, ws.partialMax.ptr());
    mlaCombine.arg(3, ws.partialSum.ptr()).arg(4, tokenList).arg(5, heads).arg(6, kvLora);
    // Dynamic shared memory: a weight and a list entry per split. Parts of 128 latent columns, a
    // thread per column.
    int parts = Math.max(1, (kvLora + 127) / 128);
    mlaCombine.arg(7, splits).launch(s, heads, count, parts, 128, 8 * splits);
  }

  /** Last step of {@link #mlaAttention}: {@code out [t, H, vDim]} from the latent context. */
  public void mlaOutV(
      CudaStream s,
      MlaWorkspace ws,
      long out,
      long kvB,
      int t,
      int heads,
      int nope,
      int vDim,
      int kvLora) {
    mlaOutVRange(s, ws, out, kvB, 0, t, heads, nope, vDim, kvLora);
  }

  /**
   * {@link #mlaOutV} for tokens {@code first .. first+count-1} only: reads their latent context
   * rows of the workspace and writes their rows of {@code out [tokens, H, vDim]}; the other rows
   * are left alone. As for {@link #mlaAbsorbRange}, a token's values do not depend on the range.
   */
  public void mlaOutVRange(
      CudaStream s,
      MlaWorkspace ws,
      long out,
      long kvB,
      int first,
      int count,
      int heads,
      int nope,
      int vDim,
      int kvLora) {
    checkRange(ws, first, count);
    long ctx = ws.ctx.ptr() + 4L * first * heads * kvLora;
    mlaOutV.arg(0, out + 4L * first * heads * vDim).arg(1, ctx).arg(2, kvB).arg(3, heads);
    mlaOutV.arg(4, nope).arg(5, vDim).arg(6, kvLora).arg(7, count);
    mlaOutV.launch(s, heads, (vDim + 31) / 32, (count + 7) / 8, 256, 0);
  }

  /**
   * Copies positions {@code 0 .. ctxLen-1} of one sequence's cache (block-table row {@code table})
   * into {@code out [ctxLen, D]} (bf16), for the prefill GEMMs.
   */
  public void mlaGatherContext(
      CudaStream s, long out, long cache, long table, int ctxLen, int d, int blockSize) {
    mlaGatherCtx.arg(0, out).arg(1, cache).arg(2, table).arg(3, d).arg(4, blockSize);
    mlaGatherCtx.launch(s, ctxLen, 1, 1, 128, 0);
  }

  /**
   * Causal softmax of prefill scores {@code S [heads, rows, ld]} (f32) into {@code P} (bf16, same
   * layout): row {@code (h, i)} sees positions {@code 0 .. pos[i]} of {@code ctxLen}.
   */
  public void mlaPrefillSoftmax(
      CudaStream s,
      long p,
      long scores,
      long pos,
      int rows,
      int heads,
      int ctxLen,
      int ld,
      float scale) {
    mlaPrefillSoftmax.arg(0, p).arg(1, scores).arg(2, pos).arg(3, rows).arg(4, ctxLen);
    mlaPrefillSoftmax.arg(5, ld).arg(6, scale).launch(s, rows, heads, 1, 256, 0);
  }
}
