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
 * <p>The expanded form ({@link #attendExpanded}, as SGLang and vLLM run MLA prefill) first
 * up-projects the gathered latents through {@code kv_b_proj} into per-head keys and values, then
 * attends per head with head dimensions {@code nope + ropeDim} and {@code vDim} (192 and 128 for
 * DeepSeek) instead of the absorbed {@code kvLora + ropeDim} and {@code kvLora} (576 and 512):
 * about a third of the arithmetic, no absorption of the queries and no output projection of the
 * latent context. Its per-head keys and values take memory per context position, so it serves
 * contexts up to {@link #expandedMaxContext()}; longer ones take the absorbed form.
 *
 * <p>GPU thread only. Takes its absorbed queries from, and leaves its output in, an {@link
 * MlaWorkspace}: run {@link MlaKernels#mlaAbsorb} before and {@link MlaKernels#mlaOutV} after.
 */
public final class MlaPrefillAttention implements AutoCloseable {
  /** Score elements per tile (f32 scores plus bf16 probabilities: 192 MB at this size). */
  public static final long DEFAULT_SCORE_BUDGET = 32L << 20;

  /** (token, head) query rows per tile: bounds the bf16 copy of the queries (75 MB at D = 576). */
  private static final int MAX_QUERY_ROWS = 1 << 16;

  /** Default memory for the expanded form's per-head keys and values. */
  public static final long DEFAULT_EXPANDED_BYTES = 512L << 20;

  private final int heads;
  private final int nope;
  private final int vDim;
  private final int ropeDim;
  private final int kvLora;
  private final int d;
  private final int maxContext;
  private final long scoreBudget;
  private final int maxTileRows;
  private final DeviceBuffer context;
  private final DeviceBuffer queries;
  private final DeviceBuffer scores;
  private final DeviceBuffer probs;
  private final int expandedMaxContext;
  private final DeviceBuffer expandedKv; // null: absorbed form only

  /**
   * Scratch for contexts of up to {@code maxContext} positions and runs of up to {@code maxTokens}
   * tokens, with at most {@code scoreBudget} score elements per tile; the absorbed form only.
   */
  public MlaPrefillAttention(
      int heads, int kvLora, int ropeDim, int maxContext, int maxTokens, long scoreBudget) {
    this(heads, 0, kvLora, ropeDim, 0, maxContext, maxTokens, scoreBudget, 0);
  }

  /**
   * As the absorbed-only constructor, plus up to {@code expandedBytes} of per-head keys and values
   * for the expanded form (heads of {@code nope + ropeDim} query/key and {@code vDim} value
   * dimensions); 0 turns the expanded form off.
   */
  public MlaPrefillAttention(
      int heads,
      int nope,
      int kvLora,
      int ropeDim,
      int vDim,
      int maxContext,
      int maxTokens,
      long scoreBudget,
      long expandedBytes) {
    this.heads = heads;
    this.nope = nope;
    this.vDim = vDim;
    this.ropeDim = ropeDim;
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
    long perPosition = 2L * heads * (nope + vDim);
    boolean expandable = nope > 0 && vDim > 0 && nope % 8 == 0 && vDim % 8 == 0 && ropeDim % 8 == 0;
    this.expandedMaxContext =
        expandable ? (int) Math.min(maxContext, expandedBytes / perPosition) : 0;
    context = DeviceBuffer.allocate(2L * maxContext * d);
    queries = DeviceBuffer.allocate(2L * maxTileRows * heads * Math.max(d, nope + ropeDim));
    scores = DeviceBuffer.allocate(4L * this.scoreBudget);
    probs = DeviceBuffer.allocate(2L * this.scoreBudget);
    expandedKv =
        expandedMaxContext > 0 ? DeviceBuffer.allocate(perPosition * expandedMaxContext) : null;
  }

  /** Bytes of device memory held. */
  public long bytes() {
    return context.bytes()
        + queries.bytes()
        + scores.bytes()
        + probs.bytes()
        + (expandedKv == null ? 0 : expandedKv.bytes());
  }

  /** The longest context {@link #attendExpanded} takes (0: the expanded form is off). */
  public int expandedMaxContext() {
    return expandedMaxContext;
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
      float scale,
      java.util.function.Consumer<String> mark) {
    gatherContext(s, k, cache, tableRow, firstPos + count, blockSize, maxContext, "prefill");
    mark.accept("mla.prefill.absorbed.gather");
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
      mark.accept("mla.prefill.absorbed.scores");
      k.mla()
          .mlaPrefillSoftmax(
              s,
              probs.ptr(),
              scores.ptr(),
              positions + 4L * tokenRow,
              rows,
              heads,
              ctxT,
              ctxT,
              scale);
      mark.accept("mla.prefill.absorbed.softmax");
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
      mark.accept("mla.prefill.absorbed.pv");
      i0 += rows;
    }
  }

  /**
   * The expanded form of {@link #attend} for tokens {@code first .. first+count-1} of the step:
   * reads their rotated queries {@code q [tokens, heads, nope + ropeDim]} (f32) and writes their
   * per-head attention outputs {@code out [tokens, heads, vDim]} (f32), the rows that {@link
   * MlaKernels#mlaOutV} would write; {@code kvB} is the layer's {@code kv_b_proj} weight {@code
   * [heads * (nope + vDim), kvLora]} (bf16). Needs no absorbed queries and leaves the workspace
   * alone. The context ({@code firstPos + count}) must be at most {@link #expandedMaxContext()}.
   */
  public void attendExpanded(
      CudaStream s,
      RingmasterKernels k,
      CublasHandle blas,
      long q,
      long kvB,
      long out,
      long cache,
      long tableRow,
      long positions,
      int first,
      int count,
      int firstPos,
      int blockSize,
      float scale,
      java.util.function.Consumer<String> mark) {
    int ctxLen = firstPos + count;
    gatherContext(s, k, cache, tableRow, ctxLen, blockSize, expandedMaxContext, "expanded prefill");
    int headKv = nope + vDim;
    int kvWidth = heads * headKv;
    long kv = expandedKv.ptr();
    // KV [ctxLen, heads * (nope + vDim)] (bf16) = C[:, :kvLora] . W_kvB^T: column-major, KV^T
    // (kvWidth x ctxLen) = W (kvLora x kvWidth)^T . C (D x ctxLen, first kvLora rows).
    blas.gemmStridedBatched(
        true,
        false,
        kvWidth,
        ctxLen,
        kvLora,
        kvB,
        kvLora,
        0,
        context.ptr(),
        d,
        0,
        false,
        true,
        kv,
        kvWidth,
        0,
        1);
    mark.accept("mla.prefill.expanded.gather_kv_up");
    int qk = nope + ropeDim;
    for (int i0 = 0; i0 < count; ) {
      int rows = Math.min(count - i0, tileRows(ctxLen));
      int ctxT = firstPos + i0 + rows;
      long tokenRow = first + i0;
      long scoresPerHead = (long) rows * ctxT;
      k.toBf16(s, queries.ptr(), q + 4L * tokenRow * heads * qk, (long) rows * heads * qk);
      mark.accept("mla.prefill.expanded.q_bf16");
      // S_h^T (ctxT x rows) = K_nope,h (nope x ctxT, ld kvWidth)^T . Q_nope,h (nope x rows) ...
      blas.gemmStridedBatched(
          true,
          false,
          ctxT,
          rows,
          nope,
          kv,
          kvWidth,
          headKv,
          queries.ptr(),
          heads * qk,
          qk,
          false,
          false,
          scores.ptr(),
          ctxT,
          scoresPerHead,
          heads);
      mark.accept("mla.prefill.expanded.scores_nope");
      // ... + k_rope (ropeDim x ctxT, shared by the heads)^T . Q_rope,h (ropeDim x rows).
      blas.gemmStridedBatched(
          true,
          false,
          ctxT,
          rows,
          ropeDim,
          context.ptr() + 2L * kvLora,
          d,
          0,
          queries.ptr() + 2L * nope,
          heads * qk,
          qk,
          true,
          false,
          scores.ptr(),
          ctxT,
          scoresPerHead,
          heads);
      mark.accept("mla.prefill.expanded.scores_rope");
      k.mla()
          .mlaPrefillSoftmax(
              s,
              probs.ptr(),
              scores.ptr(),
              positions + 4L * tokenRow,
              rows,
              heads,
              ctxT,
              ctxT,
              scale);
      mark.accept("mla.prefill.expanded.softmax");
      // out_h^T (vDim x rows, ld heads * vDim) = V_h (vDim x ctxT, ld kvWidth) . P_h^T.
      blas.gemmStridedBatched(
          false,
          false,
          vDim,
          rows,
          ctxT,
          kv + 2L * nope,
          kvWidth,
          headKv,
          probs.ptr(),
          ctxT,
          scoresPerHead,
          out + 4L * tokenRow * heads * vDim,
          heads * vDim,
          vDim,
          heads);
      mark.accept("mla.prefill.expanded.pv");
      i0 += rows;
    }
  }

  /**
   * Copies positions {@code 0 .. ctxLen-1} of a sequence's cache into {@link #context}, after
   * checking them against {@code limit}, the longest context the named path's scratch takes.
   */
  private void gatherContext(
      CudaStream s,
      RingmasterKernels k,
      long cache,
      long tableRow,
      int ctxLen,
      int blockSize,
      int limit,
      String path) {
    if (ctxLen > limit) {
      throw new IllegalArgumentException(
          "context of " + ctxLen + " positions exceeds the " + path + " scratch's " + limit);
    }
    k.mla().mlaGatherContext(s, context.ptr(), cache, tableRow, ctxLen, d, blockSize);
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
    if (expandedKv != null) {
      expandedKv.close();
    }
  }
}
