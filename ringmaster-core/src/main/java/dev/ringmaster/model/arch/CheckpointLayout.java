package dev.ringmaster.model.arch;

import dev.ringmaster.backend.DType;
import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.model.config.MoeConfig;
import dev.ringmaster.model.weights.TensorSpec;
import dev.ringmaster.model.weights.TensorSpec.Init;
import java.util.ArrayList;
import java.util.List;

/**
 * The tensors a checkpoint of a given configuration holds, with the names and shapes that
 * transformers' {@code save_pretrained} writes (per-expert layout). Used to write random-weight
 * models and to count parameters.
 */
public final class CheckpointLayout {
  private CheckpointLayout() {}

  /** All tensors of the main model (no MTP layers), in a stable order. */
  public static List<TensorSpec> tensors(ModelConfig cfg, DType dtype) {
    List<TensorSpec> out = new ArrayList<>();
    int h = cfg.hiddenSize();
    out.add(
        new TensorSpec("model.embed_tokens.weight", dims(cfg.vocabSize(), h), dtype, Init.NORMAL));
    for (int l = 0; l < cfg.numLayers(); l++) {
      String p = "model.layers." + l + ".";
      out.add(new TensorSpec(p + "input_layernorm.weight", dims(h), dtype, Init.ONES));
      out.add(new TensorSpec(p + "post_attention_layernorm.weight", dims(h), dtype, Init.ONES));
      if (cfg.architecture().usesMla()) {
        mla(out, cfg, p + "self_attn.", dtype);
      } else {
        gqa(out, cfg, p + "self_attn.", dtype);
      }
      if (cfg.isMoeLayer(l)) {
        moe(out, cfg, p + "mlp.", dtype);
      } else {
        mlp(out, p + "mlp.", h, cfg.intermediateSize(), dtype);
      }
    }
    out.add(new TensorSpec("model.norm.weight", dims(h), dtype, Init.ONES));
    if (!cfg.tieWordEmbeddings()) {
      out.add(new TensorSpec("lm_head.weight", dims(cfg.vocabSize(), h), dtype, Init.NORMAL));
    }
    return out;
  }

  /** Total parameters of the main model. */
  public static long parameterCount(ModelConfig cfg) {
    return tensors(cfg, DType.BF16).stream().mapToLong(TensorSpec::numel).sum();
  }

  private static void mla(List<TensorSpec> out, ModelConfig cfg, String p, DType dt) {
    int h = cfg.hiddenSize();
    int heads = cfg.numHeads();
    int qk = cfg.qkHeadDim();
    boolean bias = cfg.attentionBias();
    if (cfg.qLoraRank() > 0) {
      linear(out, p + "q_a_proj", cfg.qLoraRank(), h, bias, dt);
      out.add(new TensorSpec(p + "q_a_layernorm.weight", dims(cfg.qLoraRank()), dt, Init.ONES));
      linear(out, p + "q_b_proj", heads * qk, cfg.qLoraRank(), false, dt);
    } else {
      linear(out, p + "q_proj", heads * qk, h, false, dt);
    }
    linear(out, p + "kv_a_proj_with_mqa", cfg.kvLoraRank() + cfg.qkRopeHeadDim(), h, bias, dt);
    out.add(new TensorSpec(p + "kv_a_layernorm.weight", dims(cfg.kvLoraRank()), dt, Init.ONES));
    linear(
        out,
        p + "kv_b_proj",
        heads * (cfg.qkNopeHeadDim() + cfg.vHeadDim()),
        cfg.kvLoraRank(),
        false,
        dt);
    linear(out, p + "o_proj", h, heads * cfg.vHeadDim(), bias, dt);
  }

  private static void gqa(List<TensorSpec> out, ModelConfig cfg, String p, DType dt) {
    int h = cfg.hiddenSize();
    int hd = cfg.headDim();
    boolean bias = cfg.attentionBias();
    linear(out, p + "q_proj", cfg.numHeads() * hd, h, bias, dt);
    linear(out, p + "k_proj", cfg.numKvHeads() * hd, h, bias, dt);
    linear(out, p + "v_proj", cfg.numKvHeads() * hd, h, bias, dt);
    linear(out, p + "o_proj", h, cfg.numHeads() * hd, bias, dt);
    out.add(new TensorSpec(p + "q_norm.weight", dims(hd), dt, Init.ONES));
    out.add(new TensorSpec(p + "k_norm.weight", dims(hd), dt, Init.ONES));
  }

  private static void moe(List<TensorSpec> out, ModelConfig cfg, String p, DType dt) {
    MoeConfig m = cfg.moe();
    int h = cfg.hiddenSize();
    out.add(new TensorSpec(p + "gate.weight", dims(m.numExperts(), h), dt, Init.NORMAL));
    if (m.hasScoreCorrectionBias()) {
      out.add(
          new TensorSpec(
              p + "gate.e_score_correction_bias", dims(m.numExperts()), DType.F32, Init.ZEROS));
    }
    for (int e = 0; e < m.numExperts(); e++) {
      mlp(out, p + "experts." + e + ".", h, m.expertIntermediateSize(), dt);
    }
    if (m.sharedIntermediateSize() > 0) {
      mlp(out, p + "shared_experts.", h, m.sharedIntermediateSize(), dt);
    }
  }

  private static void mlp(List<TensorSpec> out, String p, int h, int inter, DType dt) {
    linear(out, p + "gate_proj", inter, h, false, dt);
    linear(out, p + "up_proj", inter, h, false, dt);
    linear(out, p + "down_proj", h, inter, false, dt);
  }

  private static void linear(
      List<TensorSpec> out, String p, int rows, int cols, boolean bias, DType dt) {
    out.add(new TensorSpec(p + ".weight", dims(rows, cols), dt, Init.NORMAL));
    if (bias) {
      out.add(new TensorSpec(p + ".bias", dims(rows), dt, Init.ZEROS));
    }
  }

  private static long[] dims(long... d) {
    return d;
  }
}
