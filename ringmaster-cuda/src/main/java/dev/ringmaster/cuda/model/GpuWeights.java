package dev.ringmaster.cuda.model;

import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.model.config.MoeConfig;
import dev.ringmaster.model.weights.TensorView;
import dev.ringmaster.model.weights.WeightStore;
import java.util.List;

/**
 * All weights of an MLA model on the device, shapes checked against the config as the CPU loader
 * checks them. Owns the device buffers. A tensor-parallel rank holds the slices the CPU's {@code
 * ModelLoader} gives it: its vocabulary rows of the embedding and LM head, its heads (rows of
 * q_b/q_proj and kv_b, columns of o_proj), its share of every MLP's intermediate dimension, and
 * either its share of every expert or (expert parallelism) its whole experts; norms, the router and
 * the latent down-projections are replicated (and the shared experts under all-to-all dispatch),
 * and row-parallel biases live on rank 0 only so that the allreduce adds them once.
 */
final class GpuWeights implements AutoCloseable {
  final DeviceMatrix embed;
  final LayerWeights[] layers;
  final long finalNorm;
  final DeviceMatrix lmHead;
  final long bytes;
  private final List<DeviceBuffer> buffers;

  private GpuWeights(
      DeviceMatrix embed,
      LayerWeights[] layers,
      long finalNorm,
      DeviceMatrix lmHead,
      long bytes,
      List<DeviceBuffer> buffers) {
    this.embed = embed;
    this.layers = layers;
    this.finalNorm = finalNorm;
    this.lmHead = lmHead;
    this.bytes = bytes;
    this.buffers = buffers;
  }

  /**
   * Uploads {@code shard}'s slice of every weight of {@code store} (GPU thread only), showing
   * progress where {@code report}.
   */
  static GpuWeights upload(
      ModelConfig cfg, WeightStore store, CudaStream stream, RankShard shard, boolean report) {
    // Progress counts checkpoint bytes read (multi-token-prediction layers, if any, are skipped).
    try (WeightUploader up = new WeightUploader(store, stream, store.totalBytes(), report)) {
      try {
        int v = cfg.vocabSize();
        int h = cfg.hiddenSize();
        int v0 = shard.start(v);
        int vn = shard.share(v);
        DeviceMatrix embed = up.matrixRows("model.embed_tokens.weight", v, h, v0, vn);
        LayerWeights[] layers = new LayerWeights[cfg.numLayers()];
        for (int l = 0; l < layers.length; l++) {
          layers[l] = layer(cfg, store, up, l, shard);
        }
        long norm = up.vector("model.norm.weight", h);
        DeviceMatrix head =
            cfg.tieWordEmbeddings() && !store.contains("lm_head.weight")
                ? embed
                : up.matrixRows("lm_head.weight", v, h, v0, vn);
        return new GpuWeights(embed, layers, norm, head, up.deviceBytes(), up.buffers());
      } catch (RuntimeException e) {
        up.buffers().forEach(DeviceBuffer::close);
        throw e;
      }
    }
  }

  private static LayerWeights layer(
      ModelConfig cfg, WeightStore store, WeightUploader up, int l, RankShard shard) {
    String p = "model.layers." + l + ".";
    int h = cfg.hiddenSize();
    LayerWeights.MlaWeights attn = mla(cfg, up, p + "self_attn.", shard);
    LayerWeights.DenseWeights dense = null;
    LayerWeights.MoeWeights moe = null;
    if (cfg.isMoeLayer(l)) {
      moe = moe(cfg, store, up, p + "mlp.", shard);
    } else {
      dense = dense(up, p + "mlp.", h, cfg.intermediateSize(), shard);
    }
    return new LayerWeights(
        up.vector(p + "input_layernorm.weight", h),
        attn,
        up.vector(p + "post_attention_layernorm.weight", h),
        dense,
        moe);
  }

  private static LayerWeights.MlaWeights mla(
      ModelConfig cfg, WeightUploader up, String p, RankShard shard) {
    int h = cfg.hiddenSize();
    int all = cfg.numHeads();
    int heads = shard.share(all);
    int h0 = shard.start(all);
    int qk = cfg.qkHeadDim();
    int kvRow = cfg.qkNopeHeadDim() + cfg.vHeadDim();
    int vd = cfg.vHeadDim();
    // attention_bias: biases on q_a_proj, kv_a_proj_with_mqa and o_proj (as the CPU loader reads).
    boolean bias = cfg.attentionBias();
    DeviceMatrix qProj = null;
    DeviceMatrix qA = null;
    long qANorm = 0;
    DeviceMatrix qB = null;
    if (cfg.qLoraRank() > 0) {
      qA = biased(up, p + "q_a_proj", cfg.qLoraRank(), h, bias);
      qANorm = up.vector(p + "q_a_layernorm.weight", cfg.qLoraRank());
      qB = up.matrixRows(p + "q_b_proj.weight", all * qk, cfg.qLoraRank(), h0 * qk, heads * qk);
    } else {
      qProj = up.matrixRows(p + "q_proj.weight", all * qk, h, h0 * qk, heads * qk);
    }
    DeviceMatrix kvA =
        biased(up, p + "kv_a_proj_with_mqa", cfg.kvLoraRank() + cfg.qkRopeHeadDim(), h, bias);
    long kvANorm = up.vector(p + "kv_a_layernorm.weight", cfg.kvLoraRank());
    DeviceMatrix kvB =
        up.matrixRows(
            p + "kv_b_proj.weight", all * kvRow, cfg.kvLoraRank(), h0 * kvRow, heads * kvRow);
    DeviceMatrix o = up.matrixCols(p + "o_proj.weight", h, all * vd, h0 * vd, heads * vd);
    if (bias && shard.rank() == 0) {
      o = o.withBias(up.vector(p + "o_proj.bias", h));
    }
    return new LayerWeights.MlaWeights(qProj, qA, qANorm, qB, kvA, kvANorm, kvB, o);
  }

  /** Linear layer {@code p.weight}, with {@code p.bias} when {@code bias}. */
  private static DeviceMatrix biased(
      WeightUploader up, String p, int rows, int cols, boolean bias) {
    DeviceMatrix m = up.matrix(p + ".weight", rows, cols);
    return bias ? m.withBias(up.vector(p + ".bias", rows)) : m;
  }

  /**
   * A SwiGLU MLP whose gate and up projections land in one matrix (gate rows first); a rank holds
   * its share of the intermediate dimension.
   */
  private static LayerWeights.DenseWeights dense(
      WeightUploader up, String p, int h, int total, RankShard shard) {
    return dense(up, p, h, total, shard, true);
  }

  /**
   * As above; {@code split} false keeps the whole MLP with its bias on every rank (shared experts
   * under all-to-all, where each rank computes its own tokens' complete output).
   */
  private static LayerWeights.DenseWeights dense(
      WeightUploader up, String p, int h, int total, RankShard shard, boolean split) {
    int i0 = split ? shard.start(total) : 0;
    int inter = split ? shard.share(total) : total;
    long from = (long) i0 * h;
    DeviceBuffer gu = up.allocate(4L * inter * h);
    up.bf16Into(
        gu, 0, up.store().require(p + "gate_proj.weight", total, h), from, (long) inter * h);
    up.bf16Into(
        gu,
        2L * inter * h,
        up.store().require(p + "up_proj.weight", total, h),
        from,
        (long) inter * h);
    // mlp_bias checkpoints (some V2 variants) bias all three projections; gate|up biases fused too.
    long guBias =
        up.vectorSlicesOrZeros(total, i0, inter, p + "gate_proj.bias", p + "up_proj.bias");
    DeviceMatrix down = up.matrixCols(p + "down_proj.weight", h, total, i0, inter);
    if (shard.rank() == 0 || !split) {
      down = down.withBias(up.vectorsOrZeros(h, p + "down_proj.bias"));
    }
    return new LayerWeights.DenseWeights(
        new DeviceMatrix(gu.ptr(), 2 * inter, h, guBias), down, inter);
  }

  private static LayerWeights.MoeWeights moe(
      ModelConfig cfg, WeightStore store, WeightUploader up, String p, RankShard shard) {
    MoeConfig m = cfg.moe();
    int h = cfg.hiddenSize();
    int experts = m.numExperts();
    int total = m.expertIntermediateSize();
    // A rank holds its experts (all of them unless expert-parallel), each as its share of the
    // intermediate dimension (all of it when expert-parallel).
    int[] owned = shard.ownedExperts(experts);
    int e = owned.length;
    int i0 = shard.expertParallel() ? 0 : shard.start(total);
    int inter = shard.expertInter(total);
    DeviceMatrix gate = up.matrix(p + "gate.weight", experts, h);
    long bias =
        m.hasScoreCorrectionBias() ? up.vector(p + "gate.e_score_correction_bias", experts) : 0;
    long expertGu = 2L * inter * h;
    long expertDown = (long) h * inter;
    DeviceBuffer w13 = up.allocate(2 * expertGu * e);
    DeviceBuffer w2 = up.allocate(2 * expertDown * e);
    long half = (long) inter * h;
    if (store.contains(p + "experts.gate_up_proj")) {
      // transformers 5 fused layout: gate_up_proj [E, 2I, H] (gate rows first), down [E, H, I].
      TensorView gu = store.require(p + "experts.gate_up_proj", experts, 2L * total, h);
      TensorView dn = store.require(p + "experts.down_proj", experts, h, total);
      for (int k = 0; k < e; k++) {
        long rows = 2L * total * owned[k];
        up.bf16Into(w13, 2 * expertGu * k, gu, (rows + i0) * h, half);
        up.bf16Into(w13, 2 * (expertGu * k + half), gu, (rows + total + i0) * h, half);
        up.bf16ColsInto(
            w2, 2 * expertDown * k, dn, (long) owned[k] * h * total, h, total, i0, inter);
      }
    } else {
      for (int k = 0; k < e; k++) {
        String ep = p + "experts." + owned[k] + ".";
        long from = (long) i0 * h;
        up.bf16Into(
            w13, 2 * expertGu * k, store.require(ep + "gate_proj.weight", total, h), from, half);
        up.bf16Into(
            w13,
            2 * (expertGu * k + half),
            store.require(ep + "up_proj.weight", total, h),
            from,
            half);
        up.bf16ColsInto(
            w2,
            2 * expertDown * k,
            store.require(ep + "down_proj.weight", h, total),
            0,
            h,
            total,
            i0,
            inter);
      }
    }
    LayerWeights.DenseWeights shared =
        m.sharedIntermediateSize() > 0
            ? dense(
                up, p + "shared_experts.", h, m.sharedIntermediateSize(), shard, !shard.allToAll())
            : null;
    return new LayerWeights.MoeWeights(gate, bias, w13.ptr(), w2.ptr(), shared);
  }

  @Override
  public void close() {
    buffers.forEach(DeviceBuffer::close);
  }
}
