package dev.ringmaster.cuda.kernels;

import dev.ringmaster.cuda.blas.CublasHandle;
import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.DeviceBuffer;

/**
 * Absorbed MLA attention of a run of prefill tokens of one sequence as tensor-core GEMMs. The
 * decode kernels give every query token its own walk over the cache, so a 4,096-token prompt reads
 * its context 4,096 times; here the sequence's context is gathered once into a dense bf16 matrix
 * {@code C [ctx, D]} and, per tile of query rows, {@code S = Q C^T} (all heads in one batched GEMM,
 * f32), a causal softmax to bf16 {@code P}, and {@code ctx = P C[:, :kvLora]} straight into the
 * workspace's latent context rows. The query rows are tiled so that the score matrix stays within a
 * fixed budget, whatever the prompt length.
 *
 * <p>GPU thread only. Takes its absorbed queries from, and leaves its output in, an {@link
 * MlaWorkspace}: run {@link RingmasterKernels#mlaAbsorb} before and {@link
 * RingmasterKernels#mlaOutV} after.
 */
public final class MlaPrefillAttention implements AutoCloseable {
  /** Score elements per tile (f32 scores plus bf16 probabilities: 192 MB at this size). */
  public static final long DEFAULT_SCORE_BUDGET = 32L << 20;

  /** (token, head) query rows per tile: bounds the bf16 copy of the queries (75 MB at D = 576). */
  private static final int MAX_QUERY_ROWS = 1 << 16;

  private final int heads;
  private final int kvLora;
  private final int d;
  private final int maxContext;
  private final long scoreBudget;
  private final int maxTileRows;
  private final DeviceBuffer context;
  private final DeviceBuffer queries;
  private final DeviceBuffer scores;
  private final DeviceBuffer probs;

  /**
   * Scratch for contexts of up to {@code maxContext} positions and runs of up to {@code maxTokens}
   * tokens, with at most {@code scoreBudget} score elements per tile.
   */
  public MlaPrefillAttention(
      int heads, int kvLora, int ropeDim, int maxContext, int maxTokens, long scoreBudget) {
    this.heads = heads;
    this.kvLora = kvLora;
    this.d = kvLora + ropeDim;
    this.maxContext = maxContext;
    if (d % 8 != 0) {
      throw new IllegalArgumentException("the prefill GEMM path needs kvLora + ropeDim % 8 == 0");
    }
    this.scoreBudget = Math.min(scoreBudget, (long) heads * maxTokens * maxContext);
    if (this.scoreBudget < (long) heads * maxContext) {
      throw new IllegalArgumentException(
          "a score budget of "
              + scoreBudget
              + " cannot hold one query row of "
              + heads
              + " heads over "
              + maxContext
              + " positions");
    }
    this.maxTileRows = Math.max(1, Math.min(maxTokens, MAX_QUERY_ROWS / heads));
    context = DeviceBuffer.allocate(2L * maxContext * d);
    queries = DeviceBuffer.allocate(2L * maxTileRows * heads * d);
    scores = DeviceBuffer.allocate(4L * this.scoreBudget);
    probs = DeviceBuffer.allocate(2L * this.scoreBudget);
  }

  /** Bytes of device memory held. */
  public long bytes() {
    return context.bytes() + queries.bytes() + scores.bytes() + probs.bytes();
  }

  /** The longest context this scratch takes. */
  public int maxContext() {
    return maxContext;
  }

  /**
   * Latent context rows of tokens {@code first .. first+count-1} of the step (absorbed queries in
   * {@code ws}) attending causally over their sequence's cache: the tokens sit at consecutive
   * positions {@code firstPos ..}, {@code positions} is the step's device position array and {@code
   * tableRow} the sequence's block-table row (device pointers). The cache already holds them.
   */
  public void attend(
      CudaStream s,
      RingmasterKernels k,
      CublasHandle blas,
      MlaWorkspace ws,
      long cache,
      long tableRow,
      long positions,
      int first,
      int count,
      int firstPos,
      int blockSize,
      float scale) {
    int ctxLen = firstPos + count;
    if (ctxLen > maxContext) {
      throw new IllegalArgumentException(
          "context of " + ctxLen + " positions exceeds the prefill scratch's " + maxContext);
    }
    k.mlaGatherContext(s, context.ptr(), cache, tableRow, ctxLen, d, blockSize);
    long rowStride = (long) heads * d;
    for (int i0 = 0; i0 < count; ) {
      // Rows i0.. see at most positions 0..firstPos+i0+rows-1: grow the tile while it fits.
      int rows = Math.min(count - i0, tileRows(firstPos + count));
      int ctxT = firstPos + i0 + rows;
      long tokenRow = first + i0;
      k.toBf16(s, queries.ptr(), ws.qLatentPtr() + 4L * tokenRow * rowStride, rows * rowStride);
      // S_h^T (ctxT x rows) = C (D x ctxT, column-major)^T . Q_h (D x rows, ld H*D).
      blas.gemmStridedBatched(
          true,
          false,
          ctxT,
          rows,
          d,
          context.ptr(),
          d,
          0,
          queries.ptr(),
          heads * d,
          d,
          scores.ptr(),
          ctxT,
          (long) rows * ctxT,
          heads);
      k.mlaPrefillSoftmax(
          s, probs.ptr(), scores.ptr(), positions + 4L * tokenRow, rows, heads, ctxT, ctxT, scale);
      // ctx_h^T (kvLora x rows, ld H*kvLora) = C[:, :kvLora]^T (kvLora x ctxT) . P_h^T.
      blas.gemmStridedBatched(
          false,
          false,
          kvLora,
          rows,
          ctxT,
          context.ptr(),
          d,
          0,
          probs.ptr(),
          ctxT,
          (long) rows * ctxT,
          ws.contextPtr() + 4L * tokenRow * heads * kvLora,
          heads * kvLora,
          kvLora,
          heads);
      i0 += rows;
    }
  }

  /** Query rows per tile when rows see up to {@code ctx} positions. */
  private int tileRows(int ctx) {
    return (int) Math.max(1, Math.min(maxTileRows, scoreBudget / ((long) heads * ctx)));
  }

  @Override
  public void close() {
    context.close();
    queries.close();
    scores.close();
    probs.close();
  }
}
