package dev.ringmaster.model.arch;

import static dev.ringmaster.model.ops.Act.ATTN;
import static dev.ringmaster.model.ops.Act.ATTN_OUT;
import static dev.ringmaster.model.ops.Act.K;
import static dev.ringmaster.model.ops.Act.NORMED;
import static dev.ringmaster.model.ops.Act.Q;
import static dev.ringmaster.model.ops.Act.V;

import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.model.ops.AttentionWeights;
import dev.ringmaster.model.ops.ModelOps;
import dev.ringmaster.model.ops.WeightSource;
import dev.ringmaster.model.ops.WeightSource.Slice;

/**
 * Qwen3-MoE: grouped-query attention with a per-head RMSNorm of queries and keys before the
 * rotation. A rank holds its query heads and its share of the KV heads.
 */
final class Qwen3MoeFamily implements AttentionFamily {
  private final ModelConfig cfg;

  Qwen3MoeFamily(ModelConfig cfg) {
    this.cfg = cfg;
  }

  @Override
  public <T> AttentionWeights<T> load(WeightSource<T> src, String p, int layer, RankContext rank) {
    int h = cfg.hiddenSize();
    int hd = cfg.headDim();
    boolean bias = cfg.attentionBias();
    int heads = rank.share(cfg.numHeads());
    int h0 = rank.start(cfg.numHeads());
    int kvHeads = rank.share(cfg.numKvHeads());
    int kv0 = rank.start(cfg.numKvHeads());
    Slice kvRows = new Slice(kv0 * hd, kvHeads * hd);
    return new AttentionWeights.Gqa<>(
        src.linearRows(p + ".q_proj", cfg.numHeads() * hd, h, new Slice(h0 * hd, heads * hd), bias),
        src.linearRows(p + ".k_proj", cfg.numKvHeads() * hd, h, kvRows, bias),
        src.linearRows(p + ".v_proj", cfg.numKvHeads() * hd, h, kvRows, bias),
        src.vector(p + ".q_norm.weight", hd),
        src.vector(p + ".k_norm.weight", hd),
        src.linearCols(
            p + ".o_proj",
            h,
            cfg.numHeads() * hd,
            new Slice(h0 * hd, heads * hd),
            bias && rank.rank() == 0));
  }

  @Override
  public <T> void forward(ModelOps<T> ops, AttentionWeights<T> weights, int layer) {
    AttentionWeights.Gqa<T> w = (AttentionWeights.Gqa<T>) weights;
    ops.linear(Q, NORMED, w.qProj());
    ops.linear(K, NORMED, w.kProj());
    ops.linear(V, NORMED, w.vProj());
    ops.gqaAttention(w, layer);
    ops.linear(ATTN_OUT, ATTN, w.oProj());
  }
}
