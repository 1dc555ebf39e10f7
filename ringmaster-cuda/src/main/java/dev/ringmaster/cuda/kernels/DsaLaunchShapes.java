package dev.ringmaster.cuda.kernels;

/**
 * Launch shapes of the DeepSeek Sparse Attention kernels of {@link DsaKernels}: position blocks a
 * row of the score kernels and their shared memory, blocks a row of the multi-block top-k and the
 * size and layout of its state. Pure arithmetic on the device's SM count, shared by the model, the
 * benchmarks and the tests.
 */
public final class DsaLaunchShapes {
  private DsaLaunchShapes() {}

  /**
   * Positions a warp of the tensor-core score kernels scores per step ({@code kIdxWarpRows} in
   * dsa_indexer.cu).
   */
  static final int SCORE_WARP_ROWS = 32;

  /** Most warps of a tensor-core score block ({@code kIdxScoreMaxWarps}). */
  static final int SCORE_MAX_WARPS = 8;

  /** Positions per block step of the tiled reference score kernels ({@code kIdxTiledTile}). */
  static final int SCORE_TILED_TILE = 64;

  /** Key stages per warp of the bf16 tensor-core score kernel ({@code kIdxBf16Stages}). */
  static final int SCORE_BF16_STAGES = 3;

  /** Raw key stages per warp of the FP8 tensor-core score kernel ({@code kIdxFp8Stages}). */
  static final int SCORE_FP8_STAGES = 4;

  /** Ints of a row's multi-block top-k state before its per-chunk counts: four histograms. */
  static final int TOPK_STATE_INTS = 4 * 256;

  /**
   * Ints of a row's candidate top-k state before its per-chunk counts: a 4,096-bin histogram and 8
   * control words ({@code kIdxCandHead} in dsa_topk.cu).
   */
  static final int TOPK_CAND_HEAD_INTS = 4096 + 8;

  /** Int of a row's candidate count in its state: the third control word ({@code kCandCount}). */
  static final int TOPK_CAND_COUNT_INT = 4096 + 2;

  /** Candidate positions a row's candidate top-k keeps ({@code kIdxCandCap}). */
  static final int TOPK_CAND_CAP = 16384;

  /** Positions per block the multi-block top-k aims at (a few of its block's 1,024 threads). */
  static final int TOPK_CHUNK = 4096;

  /** Resident multi-block top-k blocks an SM (of 1,024 threads) that topKChunks aims at. */
  static final int TOPK_BLOCKS_PER_SM = 1;

  /** Most blocks per row of the multi-block top-k. */
  public static final int TOPK_MAX_CHUNKS = 64;

  /**
   * Position blocks per row of {@link DsaKernels#scores} and {@link DsaKernels#scoresFp8} for
   * {@code rows} rows of at most {@code maxLen} positions: one resident wave of the streaming
   * tensor-core kernels (one block per SM, {@code sms} SMs, rounded down so that no second wave
   * trails), never more than the positions need at {@value #SCORE_MAX_WARPS} warps of 32 positions
   * (blocks past a row's context exit at once, so a graph captured for a long context costs little
   * on a short one). Every block stages its row's query, so more blocks than a wave re-read it for
   * nothing.
   */
  public static int scoreBlocks(int rows, long maxLen, int sms) {
    long perBlock = (long) SCORE_MAX_WARPS * SCORE_WARP_ROWS;
    long byLength = (maxLen + perBlock - 1) / perBlock;
    long wanted = Math.max(1, (long) sms / Math.max(rows, 1));
    return (int) Math.max(1, Math.min(byLength, wanted));
  }

  /**
   * {@link #scoreBlocks} for the tiled reference kernels ({@link DsaKernels#useTiledScoreKernels}):
   * about one resident wave of them (3 blocks per SM), never more than their 64-position tiles
   * need.
   */
  public static int tiledScoreBlocks(int rows, long maxLen, int sms) {
    long byLength = (maxLen + SCORE_TILED_TILE - 1) / SCORE_TILED_TILE;
    long wanted = Math.max(1, 3L * sms / Math.max(rows, 1));
    return (int) Math.max(1, Math.min(byLength, wanted));
  }

  /**
   * Shared memory of a bf16 streaming score block of {@code warps} warps (rm_indexer_scores_mma and
   * rm_indexer_scores_mma_regs). Mirrors IdxMmaSmem in dsa_indexer.cu: the query's hi and lo parts
   * [N][dim + 8] bf16 (N = heads rounded up to 16) and N weights, then per warp {@value
   * #SCORE_BF16_STAGES} stages, each the larger of a key tile [32][dim + 8] bf16 and the f32 dots
   * [32][N + 4] that overlay it; parts 128-byte aligned.
   */
  static int scoreMmaSharedBytes(int heads, int dim, int warps) {
    int n = (heads + 15) & ~15;
    int ldk = dim + 8;
    int head = 2 * up128(n * ldk * 2) + up128(n * 4);
    int stage = up128(Math.max(SCORE_WARP_ROWS * ldk * 2, SCORE_WARP_ROWS * (n + 4) * 4));
    return head + warps * SCORE_BF16_STAGES * stage;
  }

  /**
   * Shared memory of an FP8 streaming score block of {@code warps} warps. Mirrors IdxFp8MmaSmem in
   * dsa_indexer_fp8.cu: the query codes [N][dim + 8] bf16 and N weights, then per warp {@value
   * #SCORE_FP8_STAGES} raw stages (codes [32][dim] and 32 f32 scales) and one work tile, the larger
   * of the widened keys [32][dim + 8] bf16 and the f32 dots [32][N + 4]; parts 128-byte aligned.
   */
  static int scoreFp8MmaSharedBytes(int heads, int dim, int warps) {
    int n = (heads + 15) & ~15;
    int ldk = dim + 8;
    int head = up128(n * ldk * 2) + up128(n * 4);
    int raw = up128(SCORE_WARP_ROWS * dim) + up128(SCORE_WARP_ROWS * 4);
    int work = up128(Math.max(SCORE_WARP_ROWS * ldk * 2, SCORE_WARP_ROWS * (n + 4) * 4));
    return head + warps * (SCORE_FP8_STAGES * raw + work);
  }

  /**
   * Shared memory of a tiled reference score block. Mirrors IdxTiledSmem (bf16: query hi and lo
   * parts, two key tiles) and IdxFp8TiledSmem (FP8: query codes, two raw tiles, one bf16 key tile)
   * in dsa_scores_tiled.cu, then the f32 dot tile [64][N + 4] and N weights.
   */
  static int tiledSharedBytes(int heads, int dim, boolean fp8) {
    int n = (heads + 15) & ~15;
    int ldk = dim + 8;
    int bytes =
        fp8
            ? up128(n * ldk * 2)
                + 2 * up128(SCORE_TILED_TILE * dim)
                + up128(SCORE_TILED_TILE * ldk * 2)
            : 2 * up128(n * ldk * 2) + 2 * up128(SCORE_TILED_TILE * ldk * 2);
    return bytes + up128(SCORE_TILED_TILE * (n + 4) * 4) + n * 4;
  }

  /**
   * Shared memory of a {@code rm_indexer_scores_mma_bulk} block of {@code warps} warps: {@link
   * #scoreMmaSharedBytes}, then per warp {@value #SCORE_BF16_STAGES} mbarriers of 8 bytes (one per
   * key stage) after the ring.
   */
  static int scoreBulkSharedBytes(int heads, int dim, int warps) {
    return scoreMmaSharedBytes(heads, dim, warps) + warps * SCORE_BF16_STAGES * 8;
  }

  private static int up128(int b) {
    return (b + 127) & ~127;
  }

  /**
   * Index (in ints) into {@link DsaLaunchShapes#topKCandidates}' state of row {@code r}'s candidate
   * count after a run of {@code chunks} blocks a row: the positions its threshold bin held (more
   * than {@link #topKCandidateCapacity} means the list overflowed and the row was read again
   * instead; 0 for a row of at most {@code k} positions). For benchmarks and tests.
   */
  public static long topKCandidateCountIndex(int r, int chunks) {
    return (long) r * (TOPK_CAND_HEAD_INTS + 2L * chunks) + TOPK_CAND_COUNT_INT;
  }

  /**
   * Candidate positions a row's list holds in {@link DsaLaunchShapes#topKCandidates} ({@code
   * kIdxCandCap}).
   */
  public static int topKCandidateCapacity() {
    return TOPK_CAND_CAP;
  }

  static void checkChunks(int chunks) {
    if (chunks < 1 || chunks > TOPK_MAX_CHUNKS) {
      throw new IllegalArgumentException(
          chunks + " top-k chunks per row: 1 to " + TOPK_MAX_CHUNKS + " are allowed");
    }
  }

  /**
   * Bytes of the multi-block top-k's state ({@link DsaKernels#topKMulti} or {@link
   * DsaLaunchShapes#topKCandidates}) for {@code rows} rows of {@code chunks} blocks: the larger,
   * the candidate form's (per row a histogram, control words, two counts per chunk and {@value
   * #TOPK_CAND_CAP} candidates).
   */
  public static long topKStateBytes(int rows, int chunks) {
    long multi = TOPK_STATE_INTS + 2L * chunks;
    long candidates = TOPK_CAND_HEAD_INTS + 2L * chunks + TOPK_CAND_CAP;
    return 4L * rows * Math.max(multi, candidates);
  }

  /**
   * Blocks per row of {@link DsaKernels#topKMulti} for contexts of up to {@code maxLen} positions:
   * about one per {@value #TOPK_CHUNK} positions, at most {@link #TOPK_MAX_CHUNKS}.
   */
  public static int topKChunks(long maxLen) {
    return (int) Math.max(1, Math.min(TOPK_MAX_CHUNKS, (maxLen + TOPK_CHUNK - 1) / TOPK_CHUNK));
  }

  /**
   * {@link #topKChunks(long)} for {@code rows} rows on {@code sms} SMs: never more blocks a row
   * than one wave of one block an SM spread over the rows (rounded down, so that no second wave
   * trails), since at many rows the blocks' fixed costs (the histogram's merge, the tickets)
   * outweigh a shorter chunk (on one H200 at batch 32 and 128k, wide write: 4 chunks a row 57.5 us,
   * 5 74.7, 16 63.0). A row that spans several chunks keeps at least two (the multi-block forms).
   * The selections do not depend on the count.
   */
  public static int topKChunks(long maxLen, int rows, int sms) {
    long wanted = (long) TOPK_BLOCKS_PER_SM * sms / Math.max(rows, 1);
    return (int) Math.min(topKChunks(maxLen), Math.max(2, wanted));
  }
}
