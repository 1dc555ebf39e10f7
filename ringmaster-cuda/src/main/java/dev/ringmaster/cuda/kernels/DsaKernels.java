package dev.ringmaster.cuda.kernels;

import static dev.ringmaster.cuda.kernels.DsaLaunchShapes.SCORE_MAX_WARPS;
import static dev.ringmaster.cuda.kernels.DsaLaunchShapes.TOPK_CAND_HEAD_INTS;
import static dev.ringmaster.cuda.kernels.DsaLaunchShapes.TOPK_STATE_INTS;
import static dev.ringmaster.cuda.kernels.DsaLaunchShapes.checkChunks;
import static dev.ringmaster.cuda.kernels.DsaLaunchShapes.scoreBulkSharedBytes;
import static dev.ringmaster.cuda.kernels.DsaLaunchShapes.scoreFp8MmaSharedBytes;
import static dev.ringmaster.cuda.kernels.DsaLaunchShapes.scoreMmaSharedBytes;
import static dev.ringmaster.cuda.kernels.DsaLaunchShapes.tiledSharedBytes;

import dev.ringmaster.cuda.driver.CudaDriver;
import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.Kernel;
import dev.ringmaster.runtime.KernelTuning;
import java.util.function.BiFunction;
import java.util.function.IntUnaryOperator;

/**
 * Typed launches of the DeepSeek Sparse Attention kernels ({@code dsa_indexer.cu}): the indexer
 * key's LayerNorm, the indexer scores over the paged indexer-key cache, the top-k selection per
 * query and absorbed MLA attention over the selected positions; and the FP8 indexer-key forms
 * ({@code dsa_indexer_fp8.cu}: quantization on append and of the query heads, scores over e4m3
 * codes and scales); the fused key norm, ropes and append ({@code dsa_indexer_fused.cu}) and the
 * three-launch multi-block top-k ({@code dsa_topk.cu}); the tiled reference score kernels ({@code
 * dsa_scores_tiled.cu}, for tests and benchmarks); the bf16 scores with the query's fragments in
 * registers ({@code dsa_scores_regs.cu}). Part of {@link RingmasterKernels}, which loads them; use
 * from the GPU's thread only.
 */
public final class DsaKernels {
  /** Threads of a CUDA-core score block (positions scored per block and pass). */
  private static final int SCORE_THREADS = 128;

  /**
   * CUDA-core score blocks per position block of {@link DsaLaunchShapes#scoreBlocks}: that kernel
   * keeps no key stages, so three of its small blocks share an SM where one streaming block fills
   * it.
   */
  private static final int SCORE_CUDA_CORE_BLOCKS = 3;

  /** Most heads of the tensor-core score kernels ({@code 16 * kIdxMaxNTiles}). */
  private static final int SCORE_MMA_MAX_HEADS = 64;

  /** Most heads of the register-fragment score kernel ({@code 8 * kIdxRegN8}). */
  private static final int SCORE_REGS_MAX_HEADS = 32;

  /** Largest dim of the register-fragment score kernel ({@code 16 * kIdxRegKSteps}). */
  private static final int SCORE_REGS_MAX_DIM = 128;

  /** Threads of a tiled reference score block ({@code kIdxTiledThreads}). */
  private static final int SCORE_TILED_THREADS = 256;

  private static final int TOPK_THREADS = 1024;

  /** Launches (passes) of the candidate top-k. */
  private static final int TOPK_CAND_PASSES = 3;

  /** Threads of the fused indexer key kernel (the LayerNorm's block size). */
  private static final int NORM_THREADS = 128;

  /** Launches (passes) of the multi-block top-k. */
  private static final int TOPK_PASSES = 6;

  /** Shared memory a block gets without opting in. */
  private static final int DEFAULT_SHARED_BYTES = 48 * 1024;

  private final Kernel layerNorm;
  private final Kernel scores;
  private final Kernel scoresMma;
  private final Kernel scoresMmaRegs;
  private final Kernel scoresMmaQuad;
  private final Kernel scoresMmaBulk;
  private final Kernel topK;
  private final Kernel topKMulti;
  private final Kernel topKCand;
  private final Kernel topKCandHalf;
  private final Kernel topKCandWide;
  private final Kernel topKCandHalfWide;
  private final Kernel qkFused;
  private final Kernel reduce;
  private final Kernel split;
  private final Kernel sparseSplit;
  private final Kernel fp8Quantize;
  private final Kernel scoresFp8;
  private final Kernel scoresFp8Mma;
  private final Kernel scoresMmaTiled;
  private final Kernel scoresFp8MmaTiled;
  private final Kernel fp8Gather;
  private final Kernel reduceFp8;
  private final MlaKernels mla;
  private boolean indexerTensorCores = true;
  private boolean tiledScores;
  private boolean registerScores;
  private boolean quadScores;
  private boolean bulkScores;
  private boolean topKHalfBins;
  private boolean topKWideWrite;
  private final SharedOptIn scoreMmaShared;
  private final SharedOptIn scoreMmaRegsShared;
  private final SharedOptIn scoreMmaQuadShared;
  private final SharedOptIn scoreMmaBulkShared;
  private final SharedOptIn scoreFp8MmaShared;
  private final SharedOptIn scoreMmaTiledShared;
  private final SharedOptIn scoreFp8MmaTiledShared;

  /** A kernel's dynamic shared-memory opt-in: the largest size granted, the smallest refused. */
  private static final class SharedOptIn {
    private final Kernel kernel;
    private int granted = DEFAULT_SHARED_BYTES;
    private int refused = Integer.MAX_VALUE;

    SharedOptIn(Kernel kernel) {
      this.kernel = kernel;
    }

    /** Whether {@code bytes} of dynamic shared memory are granted (opting in once if needed). */
    boolean allows(int bytes) {
      if (bytes <= granted) {
        return true;
      }
      if (bytes >= refused) {
        return false;
      }
      try {
        kernel.maxDynamicSharedBytes(bytes);
        granted = bytes;
        return true;
      } catch (RuntimeException tooMuch) {
        refused = bytes;
        return false;
      }
    }
  }

  DsaKernels(BiFunction<String, Integer, Kernel> kernel, MlaKernels mla, KernelTuning tuning) {
    layerNorm = kernel.apply("rm_layernorm", 5);
    scores = kernel.apply("rm_indexer_scores", 15);
    scoresMma = kernel.apply("rm_indexer_scores_mma", 15);
    scoresMmaRegs = kernel.apply("rm_indexer_scores_mma_regs", 15);
    scoresMmaQuad = kernel.apply("rm_indexer_scores_mma_quad", 15);
    scoresMmaBulk = kernel.apply("rm_indexer_scores_mma_bulk", 15);
    topK = kernel.apply("rm_indexer_topk", 6);
    topKMulti = kernel.apply("rm_indexer_topk_multi", 8);
    topKCand = kernel.apply("rm_indexer_topk_cand", 8);
    topKCandHalf = kernel.apply("rm_indexer_topk_cand_half", 8);
    topKCandWide = kernel.apply("rm_indexer_topk_cand_wide", 8);
    topKCandHalfWide = kernel.apply("rm_indexer_topk_cand_half_wide", 8);
    qkFused = kernel.apply("rm_indexer_qk_fused", 16);
    reduce = kernel.apply("rm_indexer_reduce", 10);
    split = kernel.apply("rm_bf16_split", 4);
    sparseSplit = kernel.apply("rm_mla_sparse_split", 18);
    fp8Quantize = kernel.apply("rm_indexer_fp8_quantize", 7);
    scoresFp8 = kernel.apply("rm_indexer_scores_fp8", 17);
    scoresFp8Mma = kernel.apply("rm_indexer_scores_fp8_mma", 17);
    fp8Gather = kernel.apply("rm_indexer_fp8_gather", 7);
    reduceFp8 = kernel.apply("rm_indexer_reduce_fp8", 12);
    scoresMmaTiled = kernel.apply("rm_indexer_scores_mma_tiled", 15);
    scoresFp8MmaTiled = kernel.apply("rm_indexer_scores_fp8_mma_tiled", 17);
    scoreMmaShared = new SharedOptIn(scoresMma);
    scoreMmaRegsShared = new SharedOptIn(scoresMmaRegs);
    scoreMmaQuadShared = new SharedOptIn(scoresMmaQuad);
    scoreMmaBulkShared = new SharedOptIn(scoresMmaBulk);
    scoreFp8MmaShared = new SharedOptIn(scoresFp8Mma);
    scoreMmaTiledShared = new SharedOptIn(scoresMmaTiled);
    scoreFp8MmaTiledShared = new SharedOptIn(scoresFp8MmaTiled);
    this.mla = mla;
    registerScores = tuning.indexerScoresRegisters();
    quadScores = tuning.indexerScoresQuadReduce();
    bulkScores = tuning.indexerScoresBulkCopy();
    topKHalfBins = tuning.indexerTopkHalfBins();
    topKWideWrite = tuning.indexerTopkWideWrite();
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
   * Chooses the tensor-core score kernel (default, where {@code index_head_dim % 16 == 0} and at
   * most 64 heads) or the CUDA-core one; both compute the same scores to about 1e-5. For tests and
   * benchmarks.
   */
  public void useIndexerTensorCores(boolean on) {
    indexerTensorCores = on;
  }

  /**
   * Runs the tensor-core scores ({@link #scores}, {@link #scoresFp8}) on the tiled reference
   * kernels ({@code dsa_scores_tiled.cu}: a 64-position tile per block step) instead of the
   * streaming ones; the scores are the same bits. For the equality test and the benchmark's A/B.
   */
  public void useTiledScoreKernels(boolean on) {
    tiledScores = on;
  }

  /**
   * Runs the streaming bf16 tensor-core scores on the kernel that keeps each warp's query fragments
   * in registers ({@code rm_indexer_scores_mma_regs}) where at most {@value #SCORE_REGS_MAX_HEADS}
   * heads of at most {@value #SCORE_REGS_MAX_DIM} dims allow, else on {@code
   * rm_indexer_scores_mma}; the scores are the same bits. The constructor's tuning sets it ({@code
   * indexer-scores-registers}). For tests and benchmarks.
   */
  public void useRegisterScoreKernel(boolean on) {
    registerScores = on;
  }

  /**
   * Runs {@link #topKCandidates} on the kernel whose first pass bins the scores rounded to half
   * ({@code rm_indexer_topk_cand_half}: 64 bins an octave, where the f32 order key's top 12 bits
   * give 8); the selections are the same. The constructor's tuning sets it ({@code
   * indexer-topk-half-bins}). For tests and benchmarks.
   */
  public void useTopKHalfBins(boolean on) {
    topKHalfBins = on;
  }

  /** Whether {@link #topKCandidates} bins by the half-rounded scores ({@link #useTopKHalfBins}). */
  public boolean topKHalfBins() {
    return topKHalfBins;
  }

  /**
   * Runs {@link #topKCandidates}' ordered write with four positions a thread and one block-wide
   * scan per 4,096 positions (eight scans fewer; {@code rm_indexer_topk_cand_wide}, with {@link
   * #useTopKHalfBins} {@code rm_indexer_topk_cand_half_wide}); the selections are the same. The
   * constructor's tuning sets it ({@code indexer-topk-wide-write}). For tests and benchmarks.
   */
  public void useTopKWideWrite(boolean on) {
    topKWideWrite = on;
  }

  /** Whether {@link #topKCandidates} writes four positions a thread ({@link #useTopKWideWrite}). */
  public boolean topKWideWrite() {
    return topKWideWrite;
  }

  /**
   * Runs the register-fragment scores ({@link #useRegisterScoreKernel}) on the kernel that sums
   * their heads in registers ({@code rm_indexer_scores_mma_quad}; scores equal to f32 rounding)
   * instead of through shared memory in head order. The constructor's tuning sets it ({@code
   * indexer-scores-quad-reduce}). For tests and benchmarks.
   */
  public void useQuadScoreKernel(boolean on) {
    quadScores = on;
  }

  /**
   * Whether the register-fragment scores sum their heads in registers ({@link
   * #useQuadScoreKernel}).
   */
  public boolean quadScoreKernel() {
    return quadScores;
  }

  /**
   * Runs the head-sums-in-registers scores ({@link #useQuadScoreKernel}) on the kernel whose key
   * tiles arrive by bulk (TMA) copies, one per key row ({@code rm_indexer_scores_mma_bulk}; by
   * cp.async where the cache's block size is not a multiple of 32); the scores are the same bits.
   * The constructor's tuning sets it ({@code indexer-scores-bulk-copy}). For tests and benchmarks.
   */
  public void useBulkScoreKernel(boolean on) {
    bulkScores = on;
  }

  /** Whether the head-sums-in-registers scores copy keys in bulk ({@link #useBulkScoreKernel}). */
  public boolean bulkScoreKernel() {
    return bulkScores;
  }

  /** Whether the register-fragment score kernel is chosen ({@link #useRegisterScoreKernel}). */
  public boolean registerScoreKernel() {
    return registerScores;
  }

  /**
   * Whether {@link #scores} of {@code heads} x {@code dim} queries runs on the register-fragment
   * kernel ({@link #useRegisterScoreKernel}).
   */
  public boolean indexerScoresUseRegisters(int heads, int dim) {
    return registerScores
        && !tiledScores
        && heads <= SCORE_REGS_MAX_HEADS
        && dim <= SCORE_REGS_MAX_DIM
        && indexerUsesTensorCores(heads, dim, false)
        && streamingWarps(scoreMmaRegsShared, nw -> scoreMmaSharedBytes(heads, dim, nw)) > 0;
  }

  /** Whether {@link #scores} runs on tensor cores for {@code heads} x {@code dim} queries. */
  public boolean indexerUsesTensorCores(int heads, int dim) {
    return indexerUsesTensorCores(heads, dim, false);
  }

  /**
   * Whether {@link #scores} ({@code fp8} false) or {@link #scoresFp8} runs on tensor cores for
   * {@code heads} x {@code dim} queries.
   */
  public boolean indexerUsesTensorCores(int heads, int dim, boolean fp8) {
    if (!indexerTensorCores || dim % 16 != 0 || heads > SCORE_MMA_MAX_HEADS) {
      return false;
    }
    return tiledScores
        ? (fp8 ? scoreFp8MmaTiledShared : scoreMmaTiledShared)
            .allows(tiledSharedBytes(heads, dim, fp8))
        : scoreMmaWarps(heads, dim, fp8) > 0;
  }

  /**
   * Warps of a streaming tensor-core score block for {@code heads} x {@code dim} queries: the most,
   * up to {@value DsaLaunchShapes#SCORE_MAX_WARPS}, whose shared memory the device grants (0: none
   * fits). One such block per SM holds that SM's shared memory.
   */
  private int scoreMmaWarps(int heads, int dim, boolean fp8) {
    return fp8
        ? streamingWarps(scoreFp8MmaShared, nw -> scoreFp8MmaSharedBytes(heads, dim, nw))
        : streamingWarps(scoreMmaShared, nw -> scoreMmaSharedBytes(heads, dim, nw));
  }

  /**
   * {@link #scoreMmaWarps} for the kernel of {@code optIn} whose block of {@code warps} warps takes
   * {@code bytes.applyAsInt(warps)} bytes of shared memory.
   */
  private static int streamingWarps(SharedOptIn optIn, IntUnaryOperator bytes) {
    for (int warps = SCORE_MAX_WARPS; warps >= 1; warps--) {
      if (optIn.allows(bytes.applyAsInt(warps))) {
        return warps;
      }
    }
    return 0;
  }

  /**
   * {@code x[t] = LayerNorm(x[t]) * gamma + beta} in place for {@code rows} rows of {@code dim}.
   */
  public void layerNorm(CudaStream s, long x, long gamma, long beta, int rows, int dim, float eps) {
    layerNorm.arg(0, x).arg(1, gamma).arg(2, beta).arg(3, dim).arg(4, eps);
    layerNorm.launch(s, rows, 1, 1, NORM_THREADS, 0);
  }

  /**
   * The indexer's steps between its projections and its scores for {@code tokens} tokens in one
   * launch, the same bits as {@link #layerNorm} of {@code k} ({@code gamma}, {@code beta}, {@code
   * eps}), {@link RingmasterKernels#rope} of the first {@code ropeDim} values of the key and of
   * every query head ({@code q [tokens, heads, dim]}), the key's append at {@code slots[t]} ({@link
   * MlaKernels#mlaCacheAppend} into bf16 {@code keys} when {@code keyScales} is 0, else {@link
   * #quantizeFp8} into the FP8 codes {@code keys} and {@code keyScales}) and, when {@code qScales}
   * is not 0, {@link #quantizeFp8} of the query heads in place (their code values, scales into
   * {@code qScales [tokens, heads]}). {@code k} and {@code q} are left as those leave them.
   */
  public void indexerQkFused(
      CudaStream s,
      long q,
      long k,
      long gamma,
      long beta,
      float eps,
      int tokens,
      int heads,
      int dim,
      int ropeDim,
      long positions,
      long invFreq,
      float attnScaling,
      boolean interleaved,
      long keys,
      long keyScales,
      long slots,
      long qScales) {
    if (ropeDim <= 0 || ropeDim % 2 != 0 || ropeDim / 2 > NORM_THREADS || ropeDim > dim) {
      throw new IllegalArgumentException(
          "rope dims "
              + ropeDim
              + " of "
              + dim
              + ": the fused indexer kernel takes 2 to 256, even");
    }
    if (keyScales != 0 || qScales != 0) {
      checkFp8Dim(dim);
    }
    int perBlock = NORM_THREADS / (ropeDim / 2);
    Kernel f = qkFused;
    f.arg(0, q).arg(1, k).arg(2, gamma).arg(3, beta).arg(4, eps).arg(5, heads).arg(6, dim);
    f.arg(7, ropeDim).arg(8, positions).arg(9, invFreq).arg(10, attnScaling);
    f.arg(11, interleaved ? 1 : 0).arg(12, keys).arg(13, keyScales).arg(14, slots).arg(15, qScales);
    f.launch(s, tokens, 1 + (heads + perBlock - 1) / perBlock, 1, NORM_THREADS, 0);
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
    boolean mma = indexerUsesTensorCores(heads, dim);
    boolean regs = mma && indexerScoresUseRegisters(heads, dim);
    int bulkWarps =
        regs && quadScores && bulkScores
            ? streamingWarps(scoreMmaBulkShared, nw -> scoreBulkSharedBytes(heads, dim, nw))
            : 0;
    Kernel regsKernel = bulkWarps > 0 ? scoresMmaBulk : quadScores ? scoresMmaQuad : scoresMmaRegs;
    Kernel k = mma ? (tiledScores ? scoresMmaTiled : regs ? regsKernel : scoresMma) : scores;
    k.arg(0, out).arg(1, ldScores).arg(2, q).arg(3, w).arg(4, keys).arg(5, blockTable);
    k.arg(6, maxBlocksPerSeq).arg(7, tokenSeq).arg(8, tokenPos).arg(9, rowBase).arg(10, heads);
    k.arg(11, dim).arg(12, blockSize).arg(13, scale).arg(14, headScale);
    if (mma && tiledScores) {
      k.launch(
          s, positionBlocks, rows, 1, SCORE_TILED_THREADS, tiledSharedBytes(heads, dim, false));
    } else if (bulkWarps > 0) {
      k.launch(
          s, positionBlocks, rows, 1, 32 * bulkWarps, scoreBulkSharedBytes(heads, dim, bulkWarps));
    } else if (mma) {
      SharedOptIn optIn = quadScores ? scoreMmaQuadShared : scoreMmaRegsShared;
      int warps =
          regs
              ? streamingWarps(optIn, nw -> scoreMmaSharedBytes(heads, dim, nw))
              : scoreMmaWarps(heads, dim, false);
      k.launch(s, positionBlocks, rows, 1, 32 * warps, scoreMmaSharedBytes(heads, dim, warps));
    } else {
      k.launch(
          s,
          SCORE_CUDA_CORE_BLOCKS * positionBlocks,
          rows,
          1,
          SCORE_THREADS,
          scoreSharedBytes(heads, dim));
    }
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
   * {@link #topK} with each row spread over {@code chunks} blocks (six launches, the same result
   * bit for bit), for a few long rows: one block per row leaves most of the GPU idle at batch 1.
   * {@code state}: device scratch of {@link DsaLaunchShapes#topKStateBytes}{@code (rows, chunks)}
   * bytes, zeroed here (a memset the graph captures). Blocks past a row's context exit at once.
   */
  public void topKMulti(
      CudaStream s,
      long sel,
      int k,
      long scoresPtr,
      int ldScores,
      long tokenPos,
      int rowBase,
      int rows,
      long state,
      int chunks) {
    checkChunks(chunks);
    CudaDriver.get()
        .memsetD8Async(state, 0, 4L * rows * (TOPK_STATE_INTS + 2L * chunks), s.handle());
    Kernel kn = topKMulti;
    kn.arg(0, sel).arg(1, k).arg(2, scoresPtr).arg(3, ldScores).arg(4, tokenPos).arg(5, rowBase);
    kn.arg(6, state);
    for (int pass = 0; pass < TOPK_PASSES; pass++) {
      kn.arg(7, pass).launch(s, chunks, rows, 1, TOPK_THREADS, 0);
    }
  }

  /**
   * {@link #topKMulti}'s selections (the same bits) in three launches: a 4,096-bin histogram of the
   * order keys' top 12 bits (or the half-rounded scores' keys', {@link #useTopKHalfBins}) over each
   * row, the candidates of its threshold bin refined by the block that finishes last, and the
   * ordered write ({@code dsa_topk.cu}). {@code state}: device scratch of {@link
   * #topKStateBytes}{@code (rows, chunks)} bytes, its head zeroed here (a memset the graph
   * captures). Blocks past a row's context exit at once.
   */
  public void topKCandidates(
      CudaStream s,
      long sel,
      int k,
      long scoresPtr,
      int ldScores,
      long tokenPos,
      int rowBase,
      int rows,
      long state,
      int chunks) {
    checkChunks(chunks);
    long head = 4L * rows * (TOPK_CAND_HEAD_INTS + 2L * chunks);
    CudaDriver.get().memsetD8Async(state, 0, head, s.handle());
    Kernel kn =
        topKHalfBins
            ? (topKWideWrite ? topKCandHalfWide : topKCandHalf)
            : (topKWideWrite ? topKCandWide : topKCand);
    kn.arg(0, sel).arg(1, k).arg(2, scoresPtr).arg(3, ldScores).arg(4, tokenPos).arg(5, rowBase);
    kn.arg(6, state);
    for (int pass = 0; pass < TOPK_CAND_PASSES; pass++) {
      kn.arg(7, pass).launch(s, chunks, rows, 1, TOPK_THREADS, 0);
    }
  }

  /**
   * Quantizes {@code rows} rows of {@code dim} f32 values of {@code x} to e4m3 with one scale per
   * row, as the CPU's {@code Quantizers.fp8Vector} (the same bytes for the same input): row {@code
   * r}'s codes go to {@code codes + slot * dim} and its scale to {@code scales[slot]} ({@code slot
   * = slots[r]}, or {@code r} when {@code slots} is 0) when {@code codes} is not 0, and the codes'
   * exact values to {@code decoded + r * dim} when {@code decoded} is not 0 (it may be {@code x}).
   */
  public void quantizeFp8(
      CudaStream s, long codes, long scales, long decoded, long x, long slots, int rows, int dim) {
    checkFp8Dim(dim);
    Kernel k = fp8Quantize;
    k.arg(0, codes).arg(1, scales).arg(2, decoded).arg(3, x).arg(4, slots).arg(5, rows);
    k.arg(6, dim).launch(s, (rows + 7) / 8, 1, 1, 256, 0);
  }

  private static void checkFp8Dim(int dim) {
    if (dim <= 0 || dim > 128 || dim % 8 != 0) {
      throw new IllegalArgumentException(
          "FP8 indexer keys of " + dim + " values: the GPU kernels take multiples of 8 up to 128");
    }
  }

  /**
   * {@link #scores} over FP8 keys: {@code q} holds the query heads' code values and {@code qScale}
   * their scales ({@link #quantizeFp8} of the rotated queries), {@code codes} and {@code kScales}
   * one layer's key cache; row {@code r} of {@code out} gets {@code ks[p] * sum_h (w[t,h] *
   * headScale * qs[t,h] * scale) * relu(qc[t,h] . kc[p])} for every {@code p <= tokenPos[t]}.
   */
  public void scoresFp8(
      CudaStream s,
      long out,
      int ldScores,
      long q,
      long qScale,
      long w,
      long codes,
      long kScales,
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
    checkFp8Dim(dim);
    boolean mma = indexerUsesTensorCores(heads, dim, true);
    Kernel k = mma ? (tiledScores ? scoresFp8MmaTiled : scoresFp8Mma) : scoresFp8;
    k.arg(0, out).arg(1, ldScores).arg(2, q).arg(3, qScale).arg(4, w).arg(5, codes);
    k.arg(6, kScales).arg(7, blockTable).arg(8, maxBlocksPerSeq).arg(9, tokenSeq);
    k.arg(10, tokenPos).arg(11, rowBase).arg(12, heads).arg(13, dim).arg(14, blockSize);
    k.arg(15, scale).arg(16, headScale);
    if (mma && tiledScores) {
      k.launch(s, positionBlocks, rows, 1, SCORE_TILED_THREADS, tiledSharedBytes(heads, dim, true));
    } else if (mma) {
      int warps = scoreMmaWarps(heads, dim, true);
      k.launch(s, positionBlocks, rows, 1, 32 * warps, scoreFp8MmaSharedBytes(heads, dim, warps));
    } else {
      k.launch(
          s,
          SCORE_CUDA_CORE_BLOCKS * positionBlocks,
          rows,
          1,
          SCORE_THREADS,
          scoreSharedBytes(heads, dim));
    }
  }

  /**
   * Positions {@code 0 .. ctxLen-1} of one sequence ({@code table}: its block-table row) out of an
   * FP8 key cache: their codes widened to bf16 (exact) into {@code out [ctxLen, dim]}, their scales
   * into {@code outScales [ctxLen]}.
   */
  public void gatherFp8(
      CudaStream s,
      long out,
      long outScales,
      long codes,
      long kScales,
      long table,
      int ctxLen,
      int dim,
      int blockSize) {
    checkFp8Dim(dim);
    Kernel k = fp8Gather;
    k.arg(0, out).arg(1, outScales).arg(2, codes).arg(3, kScales).arg(4, table).arg(5, dim);
    k.arg(6, blockSize).launch(s, ctxLen, 1, 1, 32, 0);
  }

  /**
   * {@link #reduceScores} over FP8 keys: {@code dots} holds the code dot products against the
   * gathered keys ({@link #gatherFp8}), {@code kScales} their scales, {@code qScale} the query
   * heads' scales.
   */
  public void reduceScoresFp8(
      CudaStream s,
      long out,
      int ldScores,
      long dots,
      int ctx,
      long w,
      long qScale,
      long kScales,
      long tokenPos,
      int rowBase,
      int rows,
      int heads,
      float scale,
      float headScale) {
    Kernel k = reduceFp8;
    k.arg(0, out).arg(1, ldScores).arg(2, dots).arg(3, ctx).arg(4, w).arg(5, qScale);
    k.arg(6, kScales).arg(7, tokenPos).arg(8, rowBase).arg(9, heads).arg(10, scale);
    k.arg(11, headScale).launch(s, (ctx + 255) / 256, rows, 1, 256, 0);
  }

  /**
   * Absorbed MLA attention of {@code t} query tokens over their selected positions ({@code sel [t,
   * topK]}, as {@link #topK} writes it): as {@link MlaKernels#mlaAttention} but each token reads
   * only the listed cache rows; on tensor cores where {@link MlaKernels#mlaUsesTensorCores} holds
   * (the dense decode kernel reading rows through the list), else on CUDA cores.
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
    if (mla.mlaUsesTensorCores(kvLora, ropeDim)) {
      mla.mlaSparseSplitAttention(
          s,
          ws,
          cache,
          blockTable,
          maxBlocksPerSeq,
          tokenSeq,
          tokenPos,
          sel,
          topKCount,
          t,
          heads,
          ropeDim,
          kvLora,
          blockSize,
          splits,
          scale);
      mla.mlaOutV(s, ws, out, kvB, t, heads, nope, vDim, kvLora);
      return;
    }
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
