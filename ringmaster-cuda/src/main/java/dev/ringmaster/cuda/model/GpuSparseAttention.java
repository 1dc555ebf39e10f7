package dev.ringmaster.cuda.model;

import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.kernels.DsaKernels;
import dev.ringmaster.model.arch.RopeTable;
import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.model.config.SparseAttentionConfig;
import dev.ringmaster.model.ops.IndexerWeights;

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
 * chunk uses its longest context as the stride, so more rows share one group. GPU thread only.
 */
final class GpuSparseAttention implements AutoCloseable {
  /** transformers builds k_norm as {@code nn.LayerNorm(index_head_dim, eps=1e-6)}. */
  private static final float K_NORM_EPS = 1e-6f;

  private final int heads;
  private final int dim;
  private final int topK;
  private final int ropeDim;
  private final float scoreScale;
  private final float headScale;
  private final float ropeScaling;
  private final boolean interleaved;
  private final int scoreRows;
  private final long scoreStride;
  private final int sms;
  private final DeviceBuffer q;
  private final DeviceBuffer k;
  private final DeviceBuffer w;
  private final DeviceBuffer scores;
  private final DeviceBuffer selection;

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
    this.scoreRows = Math.max(scoreRows, 1);
    this.scoreStride = (maxContext + 3) & ~3L;
    this.sms = sms;
    q = DeviceBuffer.allocate(4L * maxTokens * heads * dim);
    k = DeviceBuffer.allocate(4L * maxTokens * dim);
    w = DeviceBuffer.allocate(4L * maxTokens * heads);
    scores = DeviceBuffer.allocate(4L * this.scoreRows * scoreStride);
    selection = DeviceBuffer.allocate(4L * maxTokens * topK);
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
   * 0 where it is not known on the host (a captured decode step).
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
      int maxLen) {
    DsaKernels dsa = ops.kernels.dsa();
    ops.linear(q.ptr(), act.qa.ptr(), GpuTensor.mat(iw.wqB()), n);
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
    long keys = pool.indexKeysPtr(layer);
    ops.kernels.mla().mlaCacheAppend(ops.stream, keys, k.ptr(), dim, in.slots.ptr(), n, dim);
    if (!select) {
      return;
    }
    long ld = maxLen > 0 ? (maxLen + 3) & ~3L : scoreStride;
    int group = (int) Math.max(1, Math.min(n, (long) scoreRows * scoreStride / ld));
    long contextBound = maxLen > 0 ? maxLen : scoreStride;
    for (int r0 = 0; r0 < n; r0 += group) {
      int rows = Math.min(group, n - r0);
      dsa.scores(
          ops.stream,
          scores.ptr(),
          (int) ld,
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
          DsaKernels.scoreBlocks(rows, contextBound, sms));
      dsa.topK(ops.stream, selection.ptr(), topK, scores.ptr(), (int) ld, pos, r0, rows);
    }
  }

  /** Bytes of device memory held. */
  long bytes() {
    return q.bytes() + k.bytes() + w.bytes() + scores.bytes() + selection.bytes();
  }

  @Override
  public void close() {
    Resources.closeAll(q, k, w, scores, selection);
  }
}
