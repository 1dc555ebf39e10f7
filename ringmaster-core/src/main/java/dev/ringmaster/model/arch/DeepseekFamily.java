package dev.ringmaster.model.arch;

import static dev.ringmaster.model.ops.Act.ATTN;
import static dev.ringmaster.model.ops.Act.ATTN_OUT;
import static dev.ringmaster.model.ops.Act.KVA;
import static dev.ringmaster.model.ops.Act.NORMED;
import static dev.ringmaster.model.ops.Act.Q;
import static dev.ringmaster.model.ops.Act.QA;

import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.model.ops.AttentionWeights;
import dev.ringmaster.model.ops.ModelOps;
import dev.ringmaster.model.ops.WeightSource;
import dev.ringmaster.model.ops.WeightSource.Slice;

/**
 * DeepSeek-V2 / V3 (and the models built on them): multi-head latent attention. Queries come from
 * {@code q_proj}, or through the q LoRA ({@code q_a_proj}, its norm, {@code q_b_proj}); {@code
 * kv_a_proj_with_mqa} gives the KV latent and the shared rotary key, which the attention op
 * normalises, rotates and caches; {@code kv_b_proj} is absorbed into the attention; {@code o_proj}
 * projects the context back. A rank holds its heads: rows of the query and KV up-projections,
 * columns of the output projection; the latent down-projections are replicated.
 */
final class DeepseekFamily implements AttentionFamily {
  /**
   * transformers builds q_a_layernorm and kv_a_layernorm with the default eps, not the config's.
   */
  static final double LATENT_NORM_EPS = 1e-6;

  private final ModelConfig cfg;

  DeepseekFamily(ModelConfig cfg) {
    this.cfg = cfg;
  }

  @Override
  public <T> AttentionWeights<T> load(WeightSource<T> src, String p, int layer, RankContext rank) {
    int h = cfg.hiddenSize();
    int heads = rank.share(cfg.numHeads());
    int h0 = rank.start(cfg.numHeads());
    int qk = cfg.qkHeadDim();
    int kvRow = cfg.qkNopeHeadDim() + cfg.vHeadDim();
    int v = cfg.vHeadDim();
    // attention_bias: biases on q_a_proj, kv_a_proj_with_mqa and o_proj.
    boolean bias = cfg.attentionBias();
    T qProj = null;
    T qA = null;
    T qANorm = null;
    T qB = null;
    if (cfg.qLoraRank() > 0) {
      qA = src.linearRows(p + ".q_a_proj", cfg.qLoraRank(), h, Slice.all(cfg.qLoraRank()), bias);
      qANorm = src.vector(p + ".q_a_layernorm.weight", cfg.qLoraRank());
      qB =
          src.linearRows(
              p + ".q_b_proj",
              cfg.numHeads() * qk,
              cfg.qLoraRank(),
              new Slice(h0 * qk, heads * qk),
              false);
    } else {
      qProj =
          src.linearRows(
              p + ".q_proj", cfg.numHeads() * qk, h, new Slice(h0 * qk, heads * qk), false);
    }
    int kvA = cfg.kvLoraRank() + cfg.qkRopeHeadDim();
    return new AttentionWeights.Mla<>(
        qProj,
        qA,
        qANorm,
        qB,
        src.linearRows(p + ".kv_a_proj_with_mqa", kvA, h, Slice.all(kvA), bias),
        src.vector(p + ".kv_a_layernorm.weight", cfg.kvLoraRank()),
        src.latentProjection(
            p + ".kv_b_proj.weight",
            cfg.numHeads() * kvRow,
            cfg.kvLoraRank(),
            new Slice(h0 * kvRow, heads * kvRow)),
        src.linearCols(
            p + ".o_proj",
            h,
            cfg.numHeads() * v,
            new Slice(h0 * v, heads * v),
            bias && rank.rank() == 0));
  }

  @Override
  public <T> void forward(ModelOps<T> ops, AttentionWeights<T> weights, int layer) {
    AttentionWeights.Mla<T> w = (AttentionWeights.Mla<T>) weights;
    if (w.qProj() != null) {
      ops.linear2(Q, w.qProj(), KVA, w.kvA(), NORMED);
    } else {
      ops.linear2(QA, w.qA(), KVA, w.kvA(), NORMED);
      ops.rmsNorm(QA, QA, w.qANorm(), LATENT_NORM_EPS);
      ops.linear(Q, QA, w.qB());
    }
    ops.mlaAttention(w, layer);
    ops.linear(ATTN_OUT, ATTN, w.oProj());
  }
}
