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
 * checks them. Owns the device buffers.
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

  /** Uploads every weight of {@code store} (GPU thread only). */
  static GpuWeights upload(ModelConfig cfg, WeightStore store, CudaStream stream) {
    // Progress counts checkpoint bytes read (multi-token-prediction layers, if any, are skipped).
    try (WeightUploader up = new WeightUploader(store, stream, store.totalBytes())) {
      try {
        int v = cfg.vocabSize();
        int h = cfg.hiddenSize();
        DeviceMatrix embed = up.matrix("model.embed_tokens.weight", v, h);
        LayerWeights[] layers = new LayerWeights[cfg.numLayers()];
        for (int l = 0; l < layers.length; l++) {
          layers[l] = layer(cfg, store, up, l);
        }
        long norm = up.vector("model.norm.weight", h);
        DeviceMatrix head =
            cfg.tieWordEmbeddings() && !store.contains("lm_head.weight")
                ? embed
                : up.matrix("lm_head.weight", v, h);
        return new GpuWeights(embed, layers, norm, head, up.deviceBytes(), up.buffers());
      } catch (RuntimeException e) {
        up.buffers().forEach(DeviceBuffer::close);
        throw e;
      }
    }
  }

  private static LayerWeights layer(ModelConfig cfg, WeightStore store, WeightUploader up, int l) {
    String p = "model.layers." + l + ".";
    int h = cfg.hiddenSize();
    LayerWeights.MlaWeights attn = mla(cfg, up, p + "self_attn.");
    LayerWeights.DenseWeights dense = null;
    LayerWeights.MoeWeights moe = null;
    if (cfg.isMoeLayer(l)) {
      moe = moe(cfg, store, up, p + "mlp.");
    } else {
      dense = dense(up, p + "mlp.", h, cfg.intermediateSize());
    }
    return new LayerWeights(
        up.vector(p + "input_layernorm.weight", h),
        attn,
        up.vector(p + "post_attention_layernorm.weight", h),
        dense,
        moe);
  }

  private static LayerWeights.MlaWeights mla(ModelConfig cfg, WeightUploader up, String p) {
    int h = cfg.hiddenSize();
    int heads = cfg.numHeads();
    int qk = cfg.qkHeadDim();
    // attention_bias: biases on q_a_proj, kv_a_proj_with_mqa and o_proj (as the CPU loader reads).
    boolean bias = cfg.attentionBias();
    DeviceMatrix qProj = null;
    DeviceMatrix qA = null;
    long qANorm = 0;
    DeviceMatrix qB = null;
    if (cfg.qLoraRank() > 0) {
      qA = biased(up, p + "q_a_proj", cfg.qLoraRank(), h, bias);
      qANorm = up.vector(p + "q_a_layernorm.weight", cfg.qLoraRank());
      qB = up.matrix(p + "q_b_proj.weight", heads * qk, cfg.qLoraRank());
    } else {
      qProj = up.matrix(p + "q_proj.weight", heads * qk, h);
    }
    DeviceMatrix kvA =
        biased(up, p + "kv_a_proj_with_mqa", cfg.kvLoraRank() + cfg.qkRopeHeadDim(), h, bias);
    long kvANorm = up.vector(p + "kv_a_layernorm.weight", cfg.kvLoraRank());
    DeviceMatrix kvB =
        up.matrix(
            p + "kv_b_proj.weight",
            heads * (cfg.qkNopeHeadDim() + cfg.vHeadDim()),
            cfg.kvLoraRank());
    DeviceMatrix o = biased(up, p + "o_proj", h, heads * cfg.vHeadDim(), bias);
    return new LayerWeights.MlaWeights(qProj, qA, qANorm, qB, kvA, kvANorm, kvB, o);
  }

  /** Linear layer {@code p.weight}, with {@code p.bias} when {@code bias}. */
  private static DeviceMatrix biased(
      WeightUploader up, String p, int rows, int cols, boolean bias) {
    DeviceMatrix m = up.matrix(p + ".weight", rows, cols);
    return bias ? m.withBias(up.vector(p + ".bias", rows)) : m;
  }

  /** A SwiGLU MLP whose gate and up projections land in one matrix (gate rows first). */
  private static LayerWeights.DenseWeights dense(WeightUploader up, String p, int h, int inter) {
    DeviceBuffer gu = up.allocate(4L * inter * h);
    up.bf16Into(gu, 0, up.store().require(p + "gate_proj.weight", inter, h), 0, (long) inter * h);
    up.bf16Into(
        gu,
        2L * inter * h,
        up.store().require(p + "up_proj.weight", inter, h),
        0,
        (long) inter * h);
    // mlp_bias checkpoints (some V2 variants) bias all three projections; gate|up biases fused too.
    long guBias = up.vectorsOrZeros(inter, p + "gate_proj.bias", p + "up_proj.bias");
    DeviceMatrix down =
        up.matrix(p + "down_proj.weight", h, inter)
            .withBias(up.vectorsOrZeros(h, p + "down_proj.bias"));
    return new LayerWeights.DenseWeights(
        new DeviceMatrix(gu.ptr(), 2 * inter, h, guBias), down, inter);
  }

  private static LayerWeights.MoeWeights moe(
      ModelConfig cfg, WeightStore store, WeightUploader up, String p) {
    MoeConfig m = cfg.moe();
    int h = cfg.hiddenSize();
    int e = m.numExperts();
    int inter = m.expertIntermediateSize();
    DeviceMatrix gate = up.matrix(p + "gate.weight", e, h);
    long bias = m.hasScoreCorrectionBias() ? up.vector(p + "gate.e_score_correction_bias", e) : 0;
    long expertGu = 2L * inter * h;
    long expertDown = (long) h * inter;
    DeviceBuffer w13 = up.allocate(2 * expertGu * e);
    DeviceBuffer w2 = up.allocate(2 * expertDown * e);
    if (store.contains(p + "experts.gate_up_proj")) {
      // transformers 5 fused layout: gate_up_proj [E, 2I, H] (gate rows first), down [E, H, I].
      TensorView gu = store.require(p + "experts.gate_up_proj", e, 2L * inter, h);
      TensorView dn = store.require(p + "experts.down_proj", e, h, inter);
      up.bf16Into(w13, 0, gu, 0, expertGu * e);
      up.bf16Into(w2, 0, dn, 0, expertDown * e);
    } else {
      for (int k = 0; k < e; k++) {
        String ep = p + "experts." + k + ".";
        long half = (long) inter * h;
        up.bf16Into(
            w13, 2 * expertGu * k, store.require(ep + "gate_proj.weight", inter, h), 0, half);
        up.bf16Into(
            w13,
            2 * (expertGu * k + half),
            store.require(ep + "up_proj.weight", inter, h),
            0,
            half);
        up.bf16Into(
            w2,
            2 * expertDown * k,
            store.require(ep + "down_proj.weight", h, inter),
            0,
            expertDown);
      }
    }
    LayerWeights.DenseWeights shared =
        m.sharedIntermediateSize() > 0
            ? dense(up, p + "shared_experts.", h, m.sharedIntermediateSize())
            : null;
    return new LayerWeights.MoeWeights(gate, bias, w13.ptr(), w2.ptr(), shared);
  }

  @Override
  public void close() {
    buffers.forEach(DeviceBuffer::close);
  }
}
