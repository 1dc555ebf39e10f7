package dev.ringmaster.cuda.kernels;

import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.Kernel;
import java.util.function.BiFunction;

/**
 * Typed launches of the DeepSeek Sparse Attention kernels ({@code dsa_indexer.cu}): the indexer
 * key's LayerNorm, the indexer scores over the paged indexer-key cache, the top-k selection per
 * query and absorbed MLA attention over the selected positions. Part of {@link RingmasterKernels},
 * which loads them; use from the GPU's thread only.
 */
public final class DsaKernels {
  /** Threads of a score block (positions scored per block and pass). */
  private static final int SCORE_THREADS = 128;

  private static final int TOPK_THREADS = 1024;

  /** Shared memory a block gets without opting in. */
  private static final int DEFAULT_SHARED_BYTES = 48 * 1024;

  private final Kernel layerNorm;
  private final Kernel scores;
  private final Kernel topK;
  private final Kernel reduce;
  private final Kernel split;
  private final Kernel sparseSplit;
  private final MlaKernels mla;

  DsaKernels(BiFunction<String, Integer, Kernel> kernel, MlaKernels mla) {
    layerNorm = kernel.apply("rm_layernorm", 5);
    scores = kernel.apply("rm_indexer_scores", 15);
    topK = kernel.apply("rm_indexer_topk", 6);
    reduce = kernel.apply("rm_indexer_reduce", 10);
    split = kernel.apply("rm_bf16_split", 4);
    sparseSplit = kernel.apply("rm_mla_sparse_split", 18);
    this.mla = mla;
  }

  /**
   * Throws unless the score kernel takes {@code heads} indexer heads of {@code dim} values: {@code
   * dim} a multiple of 8 (16-byte key loads) and the queries in the default shared memory.
   */
  public static void checkIndexerShape(int heads, int dim) {
    if (dim % 8 != 0 || dim <= 0) {
      throw new IllegalArgumentException(
          "index_head_dim " + dim + ": the GPU indexer kernels need a positive multiple of 8");
    }
    if (scoreSharedBytes(heads, dim) > DEFAULT_SHARED_BYTES) {
      throw new IllegalArgumentException(
          "index_n_heads x index_head_dim = "
              + heads
              + " x "
              + dim
              + ": the GPU indexer keeps a query's heads in 48 KiB of shared memory; use"
              + " --device cpu");
    }
  }

  private static int scoreSharedBytes(int heads, int dim) {
    return 4 * heads * (dim + 1);
  }

  /**
   * {@code x[t] = LayerNorm(x[t]) * gamma + beta} in place for {@code rows} rows of {@code dim}.
   */
  public void layerNorm(CudaStream s, long x, long gamma, long beta, int rows, int dim, float eps) {
    layerNorm.arg(0, x).arg(1, gamma).arg(2, beta).arg(3, dim).arg(4, eps);
    layerNorm.launch(s, rows, 1, 1, 128, 0);
  }

  /**
   * Indexer scores of query tokens {@code rowBase .. rowBase+rows-1}: row {@code r} of {@code out}
   * (stride {@code ldScores} floats) gets {@code sum_h w[t,h] * headScale * relu(q[t,h] . key[p] *
   * scale)} for every position {@code p <= tokenPos[t]} of the token's sequence. {@code
   * positionBlocks} blocks stride over the positions (a graph fixes it; any context is covered).
   */
  public void scores(
      CudaStream s,
      long out,
      int ldScores,
      long q,
      long w,
      long keys,
      long blockTable,
      int maxBlocksPerSeq,
      long tokenSeq,
      long tokenPos,
      int rowBase,
      int rows,
      int heads,
      int dim,
      int blockSize,
      float scale,
      float headScale,
      int positionBlocks) {
    Kernel k = scores;
    k.arg(0, out).arg(1, ldScores).arg(2, q).arg(3, w).arg(4, keys).arg(5, blockTable);
    k.arg(6, maxBlocksPerSeq).arg(7, tokenSeq).arg(8, tokenPos).arg(9, rowBase).arg(10, heads);
    k.arg(11, dim).arg(12, blockSize).arg(13, scale).arg(14, headScale);
    k.launch(s, positionBlocks, rows, 1, SCORE_THREADS, scoreSharedBytes(heads, dim));
  }

  /**
   * Position blocks of {@link #scores} for {@code rows} rows of at most {@code maxLen} positions:
   * enough for a few waves on {@code sms} SMs, never more than the positions need.
   */
  public static int scoreBlocks(int rows, long maxLen, int sms) {
    long byLength = (maxLen + SCORE_THREADS - 1) / SCORE_THREADS;
    long wanted = Math.max(1, 8L * sms / Math.max(rows, 1));
    return (int) Math.max(1, Math.min(byLength, wanted));
  }

  /**
   * {@code x} (f32, {@code n} values) as two bf16 parts, {@code hi = bf16(x)} and {@code lo =
   * bf16(x - hi)}: GEMMs with both, accumulated, keep about 16 bits of {@code x}.
   */
  public void splitBf16(CudaStream s, long hi, long lo, long x, long n) {
    split
        .arg(0, hi)
        .arg(1, lo)
        .arg(2, x)
        .arg(3, n)
        .launch(s, (int) ((n + 255) / 256), 1, 1, 256, 0);
  }

  /**
   * The prefill form of {@link #scores} after a GEMM: {@code s [rows * heads, ctx]} (f32) holds the
   * query-key dot products of tokens {@code rowBase ..} against positions {@code 0 .. ctx-1}; row
   * {@code r} of {@code out} gets the weighted relu sum over the heads up to the token's position.
   */
  public void reduceScores(
      CudaStream s,
      long out,
      int ldScores,
      long dots,
      int ctx,
      long w,
      long tokenPos,
      int rowBase,
      int rows,
      int heads,
      float scale,
      float headScale) {
    Kernel k = reduce;
    k.arg(0, out).arg(1, ldScores).arg(2, dots).arg(3, ctx).arg(4, w).arg(5, tokenPos);
    k.arg(6, rowBase).arg(7, heads).arg(8, scale).arg(9, headScale);
    k.launch(s, (ctx + 255) / 256, rows, 1, 256, 0);
  }

  /**
   * Top-k selection of query tokens {@code rowBase .. rowBase+rows-1} from their rows of {@code
   * scores} into {@code sel [tokens, k]} (ascending positions, ties to the earlier position, -1
   * past the end; a context of at most {@code k} positions lists them all).
   */
  public void topK(
      CudaStream s,
      long sel,
      int k,
      long scoresPtr,
      int ldScores,
      long tokenPos,
      int rowBase,
      int rows) {
    topK.arg(0, sel).arg(1, k).arg(2, scoresPtr).arg(3, ldScores).arg(4, tokenPos);
    topK.arg(5, rowBase).launch(s, rows, 1, 1, TOPK_THREADS, 0);
  }

  /**
   * Absorbed MLA attention of {@code t} query tokens over their selected positions ({@code sel [t,
   * topK]}, as {@link #topK} writes it): as {@link MlaKernels#mlaAttention} but each token reads
   * only the listed cache rows.
   */
  public void sparseMlaAttention(
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
      long sel,
      int topKCount,
      int t,
      int heads,
      int nope,
      int ropeDim,
      int vDim,
      int kvLora,
      int blockSize,
      int splits,
      float scale) {
    if (t > ws.maxTokens || splits > ws.maxSplits || (long) t * splits > ws.maxTokenSplits) {
      throw new IllegalArgumentException(
          t + " tokens / " + splits + " splits exceed the workspace");
    }
    mla.mlaAbsorb(s, ws, q, kvB, t, heads, nope, ropeDim, vDim, kvLora);
    Kernel k = sparseSplit;
    k.arg(0, ws.partialCtx.ptr()).arg(1, ws.partialMax.ptr()).arg(2, ws.partialSum.ptr());
    k.arg(3, ws.qLatent.ptr()).arg(4, cache).arg(5, blockTable).arg(6, maxBlocksPerSeq);
    k.arg(7, tokenSeq).arg(8, tokenPos).arg(9, sel).arg(10, topKCount).arg(11, 0L);
    k.arg(12, heads).arg(13, kvLora).arg(14, ropeDim).arg(15, blockSize).arg(16, splits);
    k.arg(17, scale).launch(s, (heads + 7) / 8, splits, t, 256, 0);
    mla.mlaCombine(s, ws, 0, t, heads, kvLora, splits);
    mla.mlaOutV(s, ws, out, kvB, t, heads, nope, vDim, kvLora);
  }
}
