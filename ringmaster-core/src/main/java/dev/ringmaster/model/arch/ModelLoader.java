package dev.ringmaster.model.arch;

import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.model.config.MoeConfig;
import dev.ringmaster.util.Progress;

/** Builds the decoder layers of a model from its checkpoint, checking every tensor's shape. */
final class ModelLoader {
  private final ModelConfig cfg;
  private final WeightReader w;
  private final RopeTable rope;

  ModelLoader(ModelConfig cfg, WeightReader w) {
    this.cfg = cfg;
    this.w = w;
    this.rope = new RopeTable(cfg.rope(), cfg.ropeDim());
  }

  RopeTable rope() {
    return rope;
  }

  DecoderLayer[] layers() {
    DecoderLayer[] layers = new DecoderLayer[cfg.numLayers()];
    try (Progress p = Progress.start("loading layers", cfg.numLayers(), "layers")) {
      for (int l = 0; l < layers.length; l++) {
        layers[l] = layer(l);
        p.step(1);
      }
    }
    return layers;
  }

  private DecoderLayer layer(int l) {
    String p = "model.layers." + l + ".";
    int h = cfg.hiddenSize();
    Attention attn = cfg.architecture().usesMla() ? mla(p + "self_attn") : gqa(p + "self_attn");
    Mlp mlp = cfg.isMoeLayer(l) ? moe(p + "mlp") : dense(p + "mlp", cfg.intermediateSize());
    return new DecoderLayer(
        l,
        w.vector(p + "input_layernorm.weight", h),
        attn,
        w.vector(p + "post_attention_layernorm.weight", h),
        mlp,
        cfg.rmsNormEps());
  }

  private Attention mla(String p) {
    int h = cfg.hiddenSize();
    int heads = cfg.numHeads();
    int qk = cfg.qkHeadDim();
    boolean bias = cfg.attentionBias();
    Linear qProj = null;
    Linear qA = null;
    float[] qANorm = null;
    Linear qB = null;
    if (cfg.qLoraRank() > 0) {
      qA = w.linear(p + ".q_a_proj", cfg.qLoraRank(), h, bias);
      qANorm = w.vector(p + ".q_a_layernorm.weight", cfg.qLoraRank());
      qB = w.linear(p + ".q_b_proj", heads * qk, cfg.qLoraRank(), false);
    } else {
      qProj = w.linear(p + ".q_proj", heads * qk, h, false);
    }
    Linear kvA =
        w.linear(p + ".kv_a_proj_with_mqa", cfg.kvLoraRank() + cfg.qkRopeHeadDim(), h, bias);
    float[] kvANorm = w.vector(p + ".kv_a_layernorm.weight", cfg.kvLoraRank());
    float[] kvB =
        w.matrixAsFloats(
            p + ".kv_b_proj.weight",
            heads * (cfg.qkNopeHeadDim() + cfg.vHeadDim()),
            cfg.kvLoraRank());
    Linear o = w.linear(p + ".o_proj", h, heads * cfg.vHeadDim(), bias);
    return new MlaAttention(cfg, heads, qProj, qA, qANorm, qB, kvA, kvANorm, kvB, o, rope);
  }

  private Attention gqa(String p) {
    int h = cfg.hiddenSize();
    int hd = cfg.headDim();
    boolean bias = cfg.attentionBias();
    return new GqaAttention(
        cfg.numHeads(),
        cfg.numKvHeads(),
        hd,
        w.linear(p + ".q_proj", cfg.numHeads() * hd, h, bias),
        w.linear(p + ".k_proj", cfg.numKvHeads() * hd, h, bias),
        w.linear(p + ".v_proj", cfg.numKvHeads() * hd, h, bias),
        w.linear(p + ".o_proj", h, cfg.numHeads() * hd, bias),
        w.vector(p + ".q_norm.weight", hd),
        w.vector(p + ".k_norm.weight", hd),
        cfg.rmsNormEps(),
        rope);
  }

  private DenseMlp dense(String p, int inter) {
    int h = cfg.hiddenSize();
    return new DenseMlp(
        w.linearOptionalBias(p + ".gate_proj", inter, h),
        w.linearOptionalBias(p + ".up_proj", inter, h),
        w.linearOptionalBias(p + ".down_proj", h, inter));
  }

  private MoeMlp moe(String p) {
    MoeConfig m = cfg.moe();
    int h = cfg.hiddenSize();
    int e = m.numExperts();
    int inter = m.expertIntermediateSize();
    float[] bias =
        m.hasScoreCorrectionBias() ? w.vector(p + ".gate.e_score_correction_bias", e) : null;
    Router router = new Router(m, w.matrix(p + ".gate.weight", e, h), bias);
    DenseMlp[] experts = new DenseMlp[e];
    boolean fused = w.store().contains(p + ".experts.gate_up_proj");
    for (int i = 0; i < e; i++) {
      if (fused) {
        // transformers 5 in-memory layout: gate_up_proj [E, 2I, H] (gate rows first), down [E, H,
        // I]
        long[] gu = {e, 2L * inter, h};
        long[] dn = {e, h, inter};
        experts[i] =
            new DenseMlp(
                new Linear(w.slice3d(p + ".experts.gate_up_proj", gu, i, 0, inter), null),
                new Linear(w.slice3d(p + ".experts.gate_up_proj", gu, i, inter, inter), null),
                new Linear(w.slice3d(p + ".experts.down_proj", dn, i, 0, h), null));
      } else {
        experts[i] = dense(p + ".experts." + i, inter);
      }
    }
    DenseMlp shared =
        m.sharedIntermediateSize() > 0
            ? dense(p + ".shared_experts", m.sharedIntermediateSize())
            : null;
    return new MoeMlp(router, experts, 0, shared, m.topK(), h);
  }
}
