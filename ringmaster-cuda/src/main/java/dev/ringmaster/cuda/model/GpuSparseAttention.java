package dev.ringmaster.cuda.model;

import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.kernels.DsaKernels;
import dev.ringmaster.cuda.kernels.DsaLaunchShapes;
import dev.ringmaster.model.arch.RopeTable;
import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.model.config.SparseAttentionConfig;
import dev.ringmaster.model.ops.IndexerWeights;
import java.util.ArrayList;
import java.util.List;

/**
 * The GPU's lightning indexer (DeepSeek Sparse Attention), the CPU's {@code CpuIndexer} on the
 * device: indexer queries from the normalised query LoRA, one key from the attention input
 * (LayerNorm, eps 1e-6), both rotated on their first {@code qk_rope_head_dim} dims in the indexer's
 * layout, the key appended to the paged indexer-key cache; then, for a step that attends sparsely,
 * every query's scores over its sequence's cached keys and its top-{@code index_topk} selection
 * into {@link #selectionPtr} ({@code [tokens, index_topk]}, which shared layers reuse).
 *
 * <p>Scores are computed in groups of query rows that fit a fixed scratch of {@code scoreRows} rows
 * of {@code scoreStride} positions (the longest context the block table allows): a decode step of
 * up to {@code scoreRows} rows is one group at that stride, as its graph captures it; a prefill
 * chunk uses its longest context as the stride, so more rows share one group. In a prefill chunk,
 * runs of at least {@link #GEMM_MIN_ROWS} tokens of one sequence compute their query-key dot
 * products as cuBLAS GEMMs over the sequence's gathered keys on tensor cores (the queries as two
 * bf16 parts, high and residual, whose products are accumulated: about 16 bits of the f32 query, so
 * near-ties select as the CUDA-core kernel does), in tiles of rows whose products fit a fixed
 * scratch, then reduce them to scores. Groups of at most {@code scoreRows} rows whose contexts span
 * more than one top-k chunk take the multi-block top-k ({@link DsaLaunchShapes#topKCandidates}, or
 * {@link DsaKernels#topKMulti} with {@code indexer-topk-candidates=false}): a decode graph's rows
 * always do (its bound is the longest context), and so do a long prefill's GEMM tiles (a few rows
 * each at 128k positions). GPU thread only.
 *
 * <p>With FP8 keys ({@code --indexer-cache-dtype fp8_e4m3}) the key is quantized as it is appended
 * (e4m3 codes and one f32 scale per position, the CPU's bytes for the same key), and a scoring step
 * quantizes the query heads the same way in place: the score kernels then read codes and scales
 * ({@link DsaKernels#scoresFp8}), and the prefill GEMMs multiply the code values, exact in bf16, so
 * only the high query part is needed ({@link DsaKernels#gatherFp8}, {@link
 * DsaKernels#reduceScoresFp8}).
 */
final class GpuSparseAttention implements AutoCloseable {
  /** transformers builds k_norm as {@code nn.LayerNorm(index_head_dim, eps=1e-6)}. */
  private static final float K_NORM_EPS = 1e-6f;

  /** Fewest tokens of one sequence in a prefill chunk whose scores take the GEMM path. */
  static final int GEMM_MIN_ROWS = 16;

  /** Bytes of the GEMM path's f32 product tile (at least one row of every head at full context). */
  private static final long PRODUCT_BYTES = 256L << 20;

  /**
   * Consecutive tokens {@code first .. first+count-1} of a prefill chunk that belong to sequence
   * {@code seq} (its block-table row), at positions {@code firstPos ..}.
   */
  record Run(int seq, int first, int count, int firstPos) {}

  private final int heads;
  private final int dim;
  private final int topK;
  private final int ropeDim;
  private final float scoreScale;
  private final float headScale;
  private final float ropeScaling;
  private final boolean interleaved;
  private final boolean fp8;
  private final int scoreRows;
  private final long scoreStride;
  private final int sms;
  private final DeviceBuffer q;
  private final DeviceBuffer k;
  private final DeviceBuffer w;
  private final DeviceBuffer scores;
  private final DeviceBuffer selection;
  private final DeviceBuffer topKState; // the multi-block top-k's histograms and chunk counts
  private final DeviceBuffer gatheredKeys; // bf16 [maxContext, dim]
  private final DeviceBuffer queriesBf16; // bf16 [maxTokens, heads, dim]: high parts
  private final DeviceBuffer queriesLow; // bf16 [maxTokens, heads, dim]: residuals
  private final DeviceBuffer products; // f32 tile [rows * heads, ctx]
  private final DeviceBuffer queryScales; // FP8 keys: f32 [maxTokens, heads]
  private final DeviceBuffer gatheredScales; // FP8 keys: f32 [maxContext]

  /**
   * Buffers for steps of up to {@code maxTokens} tokens and decode steps of up to {@code scoreRows}
   * rows over contexts of up to {@code maxContext} positions.
   */
  GpuSparseAttention(
      ModelConfig cfg, RopeTable rope, int maxTokens, int scoreRows, long maxContext, int sms) {
    SparseAttentionConfig dsa = cfg.sparseAttention();
    heads = dsa.indexHeads();
    dim = dsa.indexHeadDim();
    topK = dsa.topK();
    DsaKernels.checkIndexerShape(heads, dim);
    ropeDim = cfg.qkRopeHeadDim();
    scoreScale = (float) (1.0 / Math.sqrt(dim));
    headScale = (float) (1.0 / Math.sqrt(heads));
    ropeScaling = rope.attentionScaling();
    interleaved = dsa.ropeInterleaved();
    fp8 = dsa.fp8Keys();
    this.scoreRows = Math.max(scoreRows, 1);
    this.scoreStride = (maxContext + 3) & ~3L;
    this.sms = sms;
    q = DeviceBuffer.allocate(4L * maxTokens * heads * dim);
    k = DeviceBuffer.allocate(4L * maxTokens * dim);
    w = DeviceBuffer.allocate(4L * maxTokens * heads);
    scores = DeviceBuffer.allocate(4L * this.scoreRows * scoreStride);
    selection = DeviceBuffer.allocate(4L * maxTokens * topK);
    topKState =
        DeviceBuffer.allocate(
            DsaLaunchShapes.topKStateBytes(
                this.scoreRows, DsaLaunchShapes.topKChunks(scoreStride)));
    gatheredKeys = DeviceBuffer.allocate(2L * scoreStride * dim);
    queriesBf16 = DeviceBuffer.allocate(2L * maxTokens * heads * dim);
    queriesLow = DeviceBuffer.allocate(2L * maxTokens * heads * dim);
    products = DeviceBuffer.allocate(Math.max(PRODUCT_BYTES, 4L * heads * scoreStride));
    queryScales = DeviceBuffer.allocate(fp8 ? 4L * maxTokens * heads : 4);
    gatheredScales = DeviceBuffer.allocate(fp8 ? 4L * scoreStride : 4);
  }

  /** The runs of consecutive tokens of one sequence among a chunk's {@code n} tokens. */
  static List<Run> runs(int[] seq, int[] pos, int n) {
    List<Run> out = new ArrayList<>();
    int start = 0;
    for (int i = 1; i <= n; i++) {
      if (i == n || seq[i] != seq[start] || pos[i] != pos[i - 1] + 1) {
        out.add(new Run(seq[start], start, i - start, pos[start]));
        start = i;
      }
    }
    return out;
  }

  /** Positions each query attends to ({@code index_topk}). */
  int topK() {
    return topK;
  }

  /** The selections {@code [tokens, index_topk]} (int) of the last {@link #index} that selected. */
  long selectionPtr() {
    return selection.ptr();
  }

  /**
   * Runs layer {@code layer}'s indexer for the step's {@code n} tokens: caches their keys and, when
   * {@code select}, writes every token's selection. {@code maxLen}: the step's longest context, or
   * 0 where it is not known on the host (a captured decode step). {@code runs}: the chunk's runs of
   * one sequence (null: score every token with the CUDA-core kernel).
   */
  void index(
      GpuOps ops,
      Activations act,
      StepInputs in,
      BlockPool pool,
      IndexerWeights<GpuTensor> iw,
      int layer,
      int n,
      boolean select,
      int maxLen,
      List<Run> runs) {
    DsaKernels dsa = ops.kernels.dsa();
    ops.linear(q.ptr(), act.qa.ptr(), GpuTensor.mat(iw.wqB()), n);
    long keys = pool.indexKeysPtr(layer);
    long keyScales = fp8 ? pool.indexScalesPtr(layer) : 0;
    if (ops.tuning.indexerFusedOps()) {
      // One GEMV launch for the two projections of the attention input (decode-sized steps), one
      // launch for the key's norm, both ropes, the key's append and a scoring FP8 step's query
      // quantization: the same bits as the separate launches below.
      ops.linear2(
          k.ptr(),
          GpuTensor.mat(iw.wk()),
          w.ptr(),
          GpuTensor.mat(iw.weightsProj()),
          act.normed.ptr(),
          n);
      dsa.indexerQkFused(
          ops.stream,
          q.ptr(),
          k.ptr(),
          GpuTensor.vec(iw.kNormWeight()),
          GpuTensor.vec(iw.kNormBias()),
          K_NORM_EPS,
          n,
          heads,
          dim,
          ropeDim,
          in.positions.ptr(),
          act.invFreq.ptr(),
          ropeScaling,
          interleaved,
          keys,
          keyScales,
          in.slots.ptr(),
          fp8 && select ? queryScales.ptr() : 0);
    } else {
      separateQk(ops, act, in, iw, n, select, keys, keyScales);
    }
    if (!select) {
      return;
    }
    long ld = maxLen > 0 ? (maxLen + 3) & ~3L : scoreStride;
    int group = (int) Math.max(1, Math.min(n, (long) scoreRows * scoreStride / ld));
    if (runs == null) {
      scoreRows(
          ops, in, pool, keys, keyScales, 0, n, group, (int) ld, maxLen > 0 ? maxLen : scoreStride);
      return;
    }
    for (Run run : runs) {
      int ctx = run.firstPos() + run.count();
      if (run.count() >= GEMM_MIN_ROWS) {
        gemmScores(ops, in, pool, keys, keyScales, run, ctx, group, (int) ld);
      } else {
        scoreRows(ops, in, pool, keys, keyScales, run.first(), run.count(), group, (int) ld, ctx);
      }
    }
  }

  /**
   * The indexer's key and query preparation as separate launches ({@code indexer-fused-ops=false}):
   * {@code wk} and {@code weights_proj} as two linears, the key's LayerNorm, the ropes of the query
   * heads and of the key, the key's append (or FP8 quantization) and, for a scoring FP8 step, the
   * query heads' quantization.
   */
  private void separateQk(
      GpuOps ops,
      Activations act,
      StepInputs in,
      IndexerWeights<GpuTensor> iw,
      int n,
      boolean select,
      long keys,
      long keyScales) {
    DsaKernels dsa = ops.kernels.dsa();
    ops.linear(k.ptr(), act.normed.ptr(), GpuTensor.mat(iw.wk()), n);
    ops.linear(w.ptr(), act.normed.ptr(), GpuTensor.mat(iw.weightsProj()), n);
    dsa.layerNorm(
        ops.stream,
        k.ptr(),
        GpuTensor.vec(iw.kNormWeight()),
        GpuTensor.vec(iw.kNormBias()),
        n,
        dim,
        K_NORM_EPS);
    long invFreq = act.invFreq.ptr();
    long pos = in.positions.ptr();
    ops.kernels.rope(
        ops.stream,
        q.ptr(),
        heads * dim,
        dim,
        0,
        pos,
        invFreq,
        n,
        heads,
        ropeDim,
        ropeScaling,
        interleaved);
    ops.kernels.rope(
        ops.stream, k.ptr(), dim, 0, 0, pos, invFreq, n, 1, ropeDim, ropeScaling, interleaved);
    if (fp8) {
      dsa.quantizeFp8(ops.stream, keys, keyScales, 0, k.ptr(), in.slots.ptr(), n, dim);
    } else {
      ops.kernels.mla().mlaCacheAppend(ops.stream, keys, k.ptr(), dim, in.slots.ptr(), n, dim);
    }
    if (select && fp8) {
      dsa.quantizeFp8(ops.stream, 0, queryScales.ptr(), q.ptr(), q.ptr(), 0, n * heads, dim);
    }
  }

  /**
   * Scores (CUDA-core kernel) and selections of tokens {@code first .. first+count-1} in groups of
   * {@code group} rows of stride {@code ld}, contexts at most {@code contextBound}; {@code
   * keyScales}: the FP8 keys' scales (0 for bf16 keys).
   */
  private void scoreRows(
      GpuOps ops,
      StepInputs in,
      BlockPool pool,
      long keys,
      long keyScales,
      int first,
      int count,
      int group,
      int ld,
      long contextBound) {
    DsaKernels dsa = ops.kernels.dsa();
    long pos = in.positions.ptr();
    for (int r0 = first; r0 < first + count; r0 += group) {
      int rows = Math.min(group, first + count - r0);
      int blocks = DsaLaunchShapes.scoreBlocks(rows, contextBound, sms);
      if (fp8) {
        dsa.scoresFp8(
            ops.stream,
            scores.ptr(),
            ld,
            q.ptr(),
            queryScales.ptr(),
            w.ptr(),
            keys,
            keyScales,
            in.blockTable.ptr(),
            in.maxBlocksPerSeq,
            in.tokenSeq.ptr(),
            pos,
            r0,
            rows,
            heads,
            dim,
            pool.blockSize(),
            scoreScale,
            headScale,
            blocks);
        select(ops, in, ld, r0, rows, contextBound);
        continue;
      }
      dsa.scores(
          ops.stream,
          scores.ptr(),
          ld,
          q.ptr(),
          w.ptr(),
          keys,
          in.blockTable.ptr(),
          in.maxBlocksPerSeq,
          in.tokenSeq.ptr(),
          pos,
          r0,
          rows,
          heads,
          dim,
          pool.blockSize(),
          scoreScale,
          headScale,
          blocks);
      select(ops, in, ld, r0, rows, contextBound);
    }
  }

  /**
   * Top-k of the scored rows {@code r0 .. r0+rows-1} (stride {@code ld}, contexts at most {@code
   * contextBound}): spread over blocks where a row spans more than one top-k chunk and the rows fit
   * the multi-block state, else one block per row.
   */
  private void select(GpuOps ops, StepInputs in, int ld, int r0, int rows, long contextBound) {
    DsaKernels dsa = ops.kernels.dsa();
    long pos = in.positions.ptr();
    int chunks = DsaLaunchShapes.topKChunks(contextBound, rows, sms);
    if (chunks > 1 && rows <= scoreRows && ops.tuning.indexerTopkCandidates()) {
      dsa.topKCandidates(
          ops.stream,
          selection.ptr(),
          topK,
          scores.ptr(),
          ld,
          pos,
          r0,
          rows,
          topKState.ptr(),
          chunks);
    } else if (chunks > 1 && rows <= scoreRows) {
      dsa.topKMulti(
          ops.stream,
          selection.ptr(),
          topK,
          scores.ptr(),
          ld,
          pos,
          r0,
          rows,
          topKState.ptr(),
          chunks);
    } else {
      dsa.topK(ops.stream, selection.ptr(), topK, scores.ptr(), ld, pos, r0, rows);
    }
  }

  /**
   * Scores and selections of one run through GEMMs: the sequence's keys {@code 0 .. ctx-1} gathered
   * once, then tiles of rows: bf16 queries times the keys into {@code products}, reduced to scores,
   * top-k. FP8 keys are gathered as their code values with their scales, and the queries' code
   * values need no residual part.
   */
  private void gemmScores(
      GpuOps ops,
      StepInputs in,
      BlockPool pool,
      long keys,
      long keyScales,
      Run run,
      int ctx,
      int group,
      int ld) {
    DsaKernels dsa = ops.kernels.dsa();
    long pos = in.positions.ptr();
    long table = in.blockTable.ptr() + 4L * run.seq() * in.maxBlocksPerSeq;
    if (fp8) {
      dsa.gatherFp8(
          ops.stream,
          gatheredKeys.ptr(),
          gatheredScales.ptr(),
          keys,
          keyScales,
          table,
          ctx,
          dim,
          pool.blockSize());
    } else {
      ops.kernels
          .mla()
          .mlaGatherContext(
              ops.stream, gatheredKeys.ptr(), keys, table, ctx, dim, pool.blockSize());
    }
    long qf = q.ptr() + 4L * run.first() * heads * dim;
    long offset = 2L * run.first() * heads * dim;
    dsa.splitBf16(
        ops.stream,
        queriesBf16.ptr() + offset,
        queriesLow.ptr() + offset,
        qf,
        (long) run.count() * heads * dim);
    int tile = (int) Math.max(1, Math.min(group, products.bytes() / (4L * heads * ctx)));
    for (int r0 = run.first(); r0 < run.first() + run.count(); r0 += tile) {
      int rows = Math.min(tile, run.first() + run.count() - r0);
      long tileOffset = 2L * r0 * heads * dim;
      long k0 = gatheredKeys.ptr();
      ops.blas()
          .linear(
              products.ptr(), queriesBf16.ptr() + tileOffset, k0, rows * heads, ctx, dim, false);
      if (fp8) {
        dsa.reduceScoresFp8(
            ops.stream,
            scores.ptr(),
            ld,
            products.ptr(),
            ctx,
            w.ptr(),
            queryScales.ptr(),
            gatheredScales.ptr(),
            pos,
            r0,
            rows,
            heads,
            scoreScale,
            headScale);
        select(ops, in, ld, r0, rows, ctx);
        continue;
      }
      ops.blas()
          .linear(products.ptr(), queriesLow.ptr() + tileOffset, k0, rows * heads, ctx, dim, true);
      dsa.reduceScores(
          ops.stream,
          scores.ptr(),
          ld,
          products.ptr(),
          ctx,
          w.ptr(),
          pos,
          r0,
          rows,
          heads,
          scoreScale,
          headScale);
      select(ops, in, ld, r0, rows, ctx);
    }
  }

  /** Bytes of device memory held. */
  long bytes() {
    return q.bytes()
        + k.bytes()
        + w.bytes()
        + scores.bytes()
        + selection.bytes()
        + topKState.bytes()
        + gatheredKeys.bytes()
        + queriesBf16.bytes()
        + queriesLow.bytes()
        + products.bytes()
        + queryScales.bytes()
        + gatheredScales.bytes();
  }

  @Override
  public void close() {
    Resources.closeAll(
        q,
        k,
        w,
        scores,
        selection,
        topKState,
        gatheredKeys,
        queriesBf16,
        queriesLow,
        products,
        queryScales,
        gatheredScales);
  }
}
