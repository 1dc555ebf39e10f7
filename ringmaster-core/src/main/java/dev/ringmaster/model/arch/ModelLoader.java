package dev.ringmaster.model.arch;

import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.model.config.MoeConfig;
import dev.ringmaster.util.Progress;

/**
 * Builds one rank's decoder layers from the checkpoint, checking every tensor's shape. With tensor
 * parallelism a rank holds its heads (column slices of the query and KV up-projections, row slices
 * of the output projection), its share of every MLP's intermediate dimension, and either its share
 * of every expert (TP) or whole experts of its own range (EP); norms, the router and the MLA down
 * projections are replicated.
 */
final class ModelLoader {
  private final ModelConfig cfg;
  private final WeightReader w;
  private final RopeTable rope;
  private final RankContext ctx;

  ModelLoader(ModelConfig cfg, WeightReader w, RankContext ctx) {
    this.cfg = cfg;
    this.w = w;
    this.ctx = ctx;
    this.rope = new RopeTable(cfg.rope(), cfg.ropeDim());
  }

  DecoderLayer[] layers() {
    DecoderLayer[] layers = new DecoderLayer[cfg.numLayers()];
    boolean report = ctx.rank() == 0;
    try (Progress p = report ? Progress.start("loading layers", cfg.numLayers(), "layers") : null) {
      for (int l = 0; l < layers.length; l++) {
        layers[l] = layer(l);
        if (p != null) {
          p.step(1);
        }
      }
    }
    return layers;
  }

  private DecoderLayer layer(int l) {
    String p = "model.layers." + l + ".";
    int h = cfg.hiddenSize();
    Attention attn = cfg.architecture().usesMla() ? mla(p + "self_attn") : gqa(p + "self_attn");
    Mlp mlp = cfg.isMoeLayer(l) ? moe(p + "mlp") : dense(p + "mlp", cfg.intermediateSize(), true);
    boolean mlpReplicatedOutput =
        cfg.isMoeLayer(l) && ctx.parallel().a2a() == ParallelConfig.MoeA2aBackend.ALL_TO_ALL;
    return new DecoderLayer(
        l,
        w.vector(p + "input_layernorm.weight", h),
        attn,
        w.vector(p + "post_attention_layernorm.weight", h),
        mlp,
        cfg.rmsNormEps(),
        ctx,
        !mlpReplicatedOutput);
  }

  private Attention mla(String p) {
    int h = cfg.hiddenSize();
    int heads = ctx.share(cfg.numHeads());
    int h0 = ctx.start(cfg.numHeads());
    int qk = cfg.qkHeadDim();
    int kvRow = cfg.qkNopeHeadDim() + cfg.vHeadDim();
    boolean bias = cfg.attentionBias();
    Linear qProj = null;
    Linear qA = null;
    float[] qANorm = null;
    Linear qB = null;
    if (cfg.qLoraRank() > 0) {
      qA = w.linear(p + ".q_a_proj", cfg.qLoraRank(), h, bias);
      qANorm = w.vector(p + ".q_a_layernorm.weight", cfg.qLoraRank());
      qB =
          w.linearRows(
              p + ".q_b_proj", cfg.numHeads() * qk, cfg.qLoraRank(), h0 * qk, heads * qk, false);
    } else {
      qProj = w.linearRows(p + ".q_proj", cfg.numHeads() * qk, h, h0 * qk, heads * qk, false);
    }
    Linear kvA =
        w.linear(p + ".kv_a_proj_with_mqa", cfg.kvLoraRank() + cfg.qkRopeHeadDim(), h, bias);
    float[] kvANorm = w.vector(p + ".kv_a_layernorm.weight", cfg.kvLoraRank());
    float[] kvB =
        w.matrixRowsAsFloats(
            p + ".kv_b_proj.weight",
            cfg.numHeads() * kvRow,
            cfg.kvLoraRank(),
            h0 * kvRow,
            heads * kvRow);
    int v = cfg.vHeadDim();
    Linear o =
        w.linearCols(
            p + ".o_proj", h, cfg.numHeads() * v, h0 * v, heads * v, bias && ctx.rank() == 0);
    return new MlaAttention(cfg, heads, qProj, qA, qANorm, qB, kvA, kvANorm, kvB, o, rope);
  }

  private Attention gqa(String p) {
    int h = cfg.hiddenSize();
    int hd = cfg.headDim();
    boolean bias = cfg.attentionBias();
    int heads = ctx.share(cfg.numHeads());
    int h0 = ctx.start(cfg.numHeads());
    int kvHeads = ctx.share(cfg.numKvHeads());
    int kv0 = ctx.start(cfg.numKvHeads());
    return new GqaAttention(
        heads,
        kvHeads,
        hd,
        w.linearRows(p + ".q_proj", cfg.numHeads() * hd, h, h0 * hd, heads * hd, bias),
        w.linearRows(p + ".k_proj", cfg.numKvHeads() * hd, h, kv0 * hd, kvHeads * hd, bias),
        w.linearRows(p + ".v_proj", cfg.numKvHeads() * hd, h, kv0 * hd, kvHeads * hd, bias),
        w.linearCols(
            p + ".o_proj", h, cfg.numHeads() * hd, h0 * hd, heads * hd, bias && ctx.rank() == 0),
        w.vector(p + ".q_norm.weight", hd),
        w.vector(p + ".k_norm.weight", hd),
        cfg.rmsNormEps(),
        rope);
  }

  /** A SwiGLU MLP; {@code split} shards its intermediate dimension across the ranks. */
  private DenseMlp dense(String p, int inter, boolean split) {
    int h = cfg.hiddenSize();
    int i0 = split ? ctx.start(inter) : 0;
    int in = split ? ctx.share(inter) : inter;
    boolean gateBias = w.store().contains(p + ".gate_proj.bias");
    boolean upBias = w.store().contains(p + ".up_proj.bias");
    boolean downBias = w.store().contains(p + ".down_proj.bias") && (!split || ctx.rank() == 0);
    return new DenseMlp(
        w.linearRows(p + ".gate_proj", inter, h, i0, in, gateBias),
        w.linearRows(p + ".up_proj", inter, h, i0, in, upBias),
        w.linearCols(p + ".down_proj", h, inter, i0, in, downBias));
  }

  private MoeMlp moe(String p) {
    MoeConfig m = cfg.moe();
    int h = cfg.hiddenSize();
    int e = m.numExperts();
    int inter = m.expertIntermediateSize();
    float[] bias =
        m.hasScoreCorrectionBias() ? w.vector(p + ".gate.e_score_correction_bias", e) : null;
    Router router = new Router(m, w.matrix(p + ".gate.weight", e, h), bias);
    ParallelConfig par = ctx.parallel();
    boolean ep = par.expertParallel();
    ExpertPlacement placement = ep ? par.placementFor(e) : null;
    int[] owned =
        ep ? placement.expertsOf(ctx.rank()) : java.util.stream.IntStream.range(0, e).toArray();
    int count = owned.length;
    // Under EP each owned expert is whole; under TP every expert is split by intermediate dim.
    int i0 = ep ? 0 : ctx.start(inter);
    int in = ep ? inter : ctx.share(inter);
    DenseMlp[] experts = new DenseMlp[count];
    boolean fused = w.store().contains(p + ".experts.gate_up_proj");
    for (int k = 0; k < count; k++) {
      int id = owned[k];
      if (fused) {
        // transformers 5 in-memory layout: gate_up_proj [E, 2I, H] (gate rows first), down [E, H,
        // I]
        long[] gu = {e, 2L * inter, h};
        long[] dn = {e, h, inter};
        experts[k] =
            new DenseMlp(
                new Linear(w.slice3d(p + ".experts.gate_up_proj", gu, id, i0, in), null),
                new Linear(w.slice3d(p + ".experts.gate_up_proj", gu, id, inter + i0, in), null),
                new Linear(w.slice3dCols(p + ".experts.down_proj", dn, id, i0, in), null));
      } else {
        String ep0 = p + ".experts." + id;
        experts[k] =
            new DenseMlp(
                w.linearRows(ep0 + ".gate_proj", inter, h, i0, in, false),
                w.linearRows(ep0 + ".up_proj", inter, h, i0, in, false),
                w.linearCols(ep0 + ".down_proj", h, inter, i0, in, false));
      }
    }
    boolean a2a = par.a2a() == ParallelConfig.MoeA2aBackend.ALL_TO_ALL && ctx.size() > 1;
    DenseMlp shared =
        m.sharedIntermediateSize() > 0
            ? dense(p + ".shared_experts", m.sharedIntermediateSize(), !a2a)
            : null;
    return new MoeMlp(
        router, experts, placement, ctx.rank(), shared, m.topK(), h, a2a ? ctx : null);
  }
}
