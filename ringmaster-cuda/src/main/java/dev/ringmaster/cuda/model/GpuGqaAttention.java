package dev.ringmaster.cuda.model;

import dev.ringmaster.cuda.kernels.GqaAttention;
import dev.ringmaster.cuda.kernels.GqaWorkspace;
import dev.ringmaster.model.arch.RopeTable;
import dev.ringmaster.model.config.ModelConfig;

/**
 * The GPU's grouped-query attention op (Qwen3-MoE), after the q/k/v projections: per-head q and k
 * RMSNorm, rotary embedding and the K/V append to the paged cache in one launch, then split-KV
 * attention over the cache (causal per token) with a combine when a query's context is split. The
 * cache row of a token is {@link GqaAttention.Shape#cacheRowWidth} bf16 values: the rotated keys of
 * this rank's KV heads, then their values.
 */
final class GpuGqaAttention implements AutoCloseable {
  private final GqaAttention.Shape shape;
  private final GqaWorkspace workspace;
  private final float eps;
  private final float scale;
  private final float ropeScaling;
  private final boolean interleaved;

  /** The attention of a rank holding {@code heads} query heads and {@code kvHeads} KV heads. */
  GpuGqaAttention(ModelConfig cfg, RopeTable rope, int heads, int kvHeads, int maxTokens) {
    this.shape = new GqaAttention.Shape(heads, kvHeads, cfg.headDim());
    this.workspace =
        new GqaWorkspace(
            Activations.MAX_SPLITS, Math.max(2L * maxTokens, 64L * Activations.MAX_SPLITS), shape);
    this.eps = (float) cfg.rmsNormEps();
    this.scale = (float) (1.0 / Math.sqrt(cfg.headDim()));
    this.ropeScaling = rope.attentionScaling();
    this.interleaved = rope.interleaved();
  }

  /**
   * Refuses, before anything is loaded, a model whose attention shape the GQA kernels cannot take,
   * naming the limit.
   */
  static void checkShape(ModelConfig cfg) {
    try {
      new GqaAttention.Shape(cfg.numHeads(), cfg.numKvHeads(), cfg.headDim());
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          cfg.architecture() + " on the GPU: " + e.getMessage() + "; use --device cpu", e);
    }
  }

  /** The cache's row width per token and layer (keys then values of this rank's KV heads). */
  static int cacheRowWidth(ModelConfig cfg, int kvHeads) {
    return 2 * kvHeads * cfg.headDim();
  }

  /**
   * Splits of each query's context for a step of {@code tokens} with contexts up to {@code maxLen}.
   */
  int splits(int tokens, int maxLen, int sms) {
    return GqaAttention.splits(tokens, shape.kvHeads(), maxLen, sms, workspace.splitLimit(tokens));
  }

  /** Bytes of device memory held. */
  long bytes() {
    return workspace.bytes();
  }

  /**
   * Attention of {@code n} tokens: reads {@code act.q}, {@code act.k} and {@code act.v} (queries
   * and keys normed and rotated in place), appends keys and values to layer {@code layerCache} at
   * {@code in.slots}, writes {@code act.attn}. {@code qNorm} / {@code kNorm}: the per-head norm
   * weights, or 0.
   */
  void forward(
      GpuOps ops,
      Activations act,
      StepInputs in,
      long qNorm,
      long kNorm,
      long layerCache,
      int blockSize,
      int n,
      int splits) {
    GqaAttention k = ops.kernels.gqaAttention();
    int kvWidth = shape.kvHeads() * shape.headDim();
    k.qkNormRopeAppend(
        ops.stream,
        shape,
        act.q.ptr(),
        shape.queryWidth(),
        act.k.ptr(),
        kvWidth,
        act.v.ptr(),
        kvWidth,
        qNorm,
        kNorm,
        eps,
        in.positions.ptr(),
        act.invFreq.ptr(),
        ropeScaling,
        interleaved,
        layerCache,
        in.slots.ptr(),
        n);
    k.attention(
        ops.stream,
        workspace,
        shape,
        act.attn.ptr(),
        act.q.ptr(),
        shape.queryWidth(),
        layerCache,
        in.blockTable.ptr(),
        in.maxBlocksPerSeq,
        in.tokenSeq.ptr(),
        in.positions.ptr(),
        n,
        blockSize,
        splits,
        scale);
  }

  @Override
  public void close() {
    workspace.close();
  }
}
