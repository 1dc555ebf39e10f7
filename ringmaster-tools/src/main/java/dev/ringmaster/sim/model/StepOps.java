package dev.ringmaster.sim.model;

import dev.ringmaster.sim.model.ModelShape.AttentionShape;
import dev.ringmaster.sim.model.ModelShape.IndexerShape;
import dev.ringmaster.sim.model.ModelShape.MoeShape;
import dev.ringmaster.sim.model.OpCost.Kind;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * FLOPs, bytes and kernel launches of every operator one rank runs in one forward pass. With {@code
 * Sharding(1, 1)} it gives the whole model's counts.
 *
 * <p>Conventions: a matmul of T tokens against an {@code rows x cols} weight costs {@code 2 T rows
 * cols} FLOPs and reads the weight's bytes once per step (decode steps are weight-streaming); the
 * routed experts read only the experts the batch touches ({@link ExpertStats}); MLA decode runs in
 * the absorbed form and reads each sequence's latent cache once; activations are not counted as
 * bytes (they stay in cache at decode sizes).
 */
public final class StepOps {
  private final WeightInventory inventory;
  private final QuantScheme quant;
  private final Sharding sharding;

  /** Operator model for a model, weight scheme and sharding. */
  public StepOps(WeightInventory inventory, QuantScheme quant, Sharding sharding) {
    this.inventory = inventory;
    this.quant = quant;
    this.sharding = sharding;
  }

  /** Operators of one layer, per rank. */
  public List<OpCost> layer(int layer, StepShape step) {
    List<OpCost> out = new ArrayList<>();
    ModelShape s = inventory.shape();
    for (Weight w : inventory.attention(layer)) {
      if (w.role() == Role.ATTENTION_PROJ || w.role() == Role.INDEXER_PROJ) {
        out.add(gemm("attn." + shortName(w), w, step.tokens(), Category.WEIGHTS));
      }
    }
    out.add(attentionCore(step));
    if (s.hasIndexer(layer)) {
      out.add(indexerScores(step));
    }
    // input norm, then rope and cache write (MLA: the latent norm, both ropes and the append in
    // one launch, plus the q LoRA norm where there is one).
    int normRopeCache =
        s.attention().kind() == AttentionKind.MLA ? (s.attention().qLoraRank() > 0 ? 3 : 2) : 3;
    out.add(misc("attn.norm_rope_cache", normRopeCache));
    List<Weight> mlp = inventory.mlp(layer);
    if (!s.isMoeLayer(layer)) {
      for (Weight w : mlp) {
        if (w.role() == Role.DENSE_MLP) {
          out.add(gemm("mlp." + shortName(w), w, step.tokens(), Category.WEIGHTS));
        }
      }
      out.add(misc("mlp.norm_act", 1)); // the activation rides in the gate|up launch
      return out;
    }
    MoeShape m = s.moe();
    double touchedPerRank =
        ExpertStats.expectedDistinctPerRank(m.numExperts(), m.topK(), step.tokens(), sharding.ep());
    for (Weight w : mlp) {
      switch (w.role()) {
        case ROUTER -> out.add(gemm("moe.router", w, step.tokens(), Category.WEIGHTS));
        case SHARED_EXPERT ->
            out.add(gemm("moe.shared." + shortName(w), w, step.tokens(), Category.WEIGHTS));
        case ROUTED_EXPERT -> out.add(routed(w, step.tokens(), touchedPerRank, m));
        default -> {}
      }
    }
    // norm, top-k, token sort/align, weighted sum (the activation rides in the gate|up launch).
    out.add(misc("moe.route_sort_act", 4));
    return out;
  }

  /** Embedding lookup and LM head, per rank. */
  public List<OpCost> headAndEmbedding(StepShape step) {
    List<OpCost> out = new ArrayList<>();
    ModelShape s = inventory.shape();
    out.add(
        new OpCost(
            "embed",
            Category.WEIGHTS,
            Kind.MISC,
            0,
            2.0 * step.tokens() * s.hiddenSize(),
            "bf16",
            1));
    for (Weight w : inventory.head()) {
      if (w.role() == Role.LM_HEAD) {
        out.add(gemm("lm_head", w, step.logitTokens(), Category.WEIGHTS));
      }
    }
    if (s.tieWordEmbeddings()) {
      Weight e = inventory.embedding().get(0);
      out.add(gemm("lm_head(tied)", e, step.logitTokens(), Category.WEIGHTS));
    }
    out.add(misc("final_norm_sample", 3));
    return out;
  }

  /** All operators of a forward pass, same-named operators of different layers summed. */
  public List<OpCost> forward(StepShape step) {
    Map<String, OpCost> merged = new LinkedHashMap<>();
    List<OpCost> all = new ArrayList<>(headAndEmbedding(step));
    for (int l = 0; l < inventory.shape().numLayers(); l++) {
      all.addAll(layer(l, step));
    }
    for (OpCost op : all) {
      merged.merge(
          op.name(),
          op,
          (a, b) ->
              new OpCost(
                  a.name(),
                  a.category(),
                  a.kind(),
                  a.flops() + b.flops(),
                  a.bytes() + b.bytes(),
                  a.computeDtype(),
                  a.kernels() + b.kernels()));
    }
    return List.copyOf(merged.values());
  }

  private OpCost gemm(String name, Weight w, int tokens, Category cat) {
    double frac = sharding.fraction(w.split());
    double flops = 2.0 * tokens * w.rows() * w.cols() * w.count() * frac;
    return new OpCost(
        name, cat, Kind.GEMM, flops, w.bytes(quant) * frac, computeDtype(w), launches(w));
  }

  /**
   * Launches the engine makes for weight {@code w}: an up projection rides in its gate's launch
   * (one gate|up matrix), MLA's kv_a in the q (or q_a) projection's, and the absorbed kv_b takes
   * two (query absorption and the latent output projection).
   */
  private int launches(Weight w) {
    String n = shortName(w);
    if (n.equals("up_proj")) {
      return 0;
    }
    if (inventory.shape().attention().kind() == AttentionKind.MLA) {
      if (n.equals("kv_a_proj_with_mqa")) {
        return 0;
      }
      if (n.equals("kv_b_proj")) {
        return 2;
      }
    }
    return 1;
  }

  private OpCost routed(Weight w, int tokens, double touchedPerRank, MoeShape m) {
    double perExpertBytes = w.bytes(quant) / w.count() / sharding.expertTp();
    // Every rank does 1/tp of the routed FLOPs, whether split by TP, EP or both.
    double flops = 2.0 * tokens * m.topK() * w.rows() * w.cols() / sharding.tp();
    return new OpCost(
        "moe.experts." + shortName(w),
        Category.MOE,
        Kind.GEMM,
        flops,
        perExpertBytes * touchedPerRank,
        computeDtype(w),
        launches(w));
  }

  private OpCost attentionCore(StepShape step) {
    ModelShape s = inventory.shape();
    AttentionShape a = s.attention();
    int tp = sharding.tp();
    double attended = step.attendedPerQuery();
    double kvRead = step.contextLen();
    if (s.indexer() != null) {
      attended = Math.min(attended, s.indexer().topK());
      // A sparse read gathers only the selected tokens of each sequence's cache.
      kvRead =
          Math.min(
              kvRead, (double) s.indexer().topK() * Math.max(1, step.tokens() / step.sequences()));
      kvRead = Math.min(kvRead, step.contextLen());
    }
    double kvBytesPerToken = KvLayout.attentionBytesPerTokenPerLayer(s, step.kvDtype());
    double headsPerRank = (double) a.numHeads() / tp;
    double flops;
    double bytes;
    if (a.kind() == AttentionKind.MLA) {
      if (step.absorbedMla()) {
        // scores over latent+rope, then weighted sum of latents; every rank reads the whole latent.
        flops =
            2.0
                * step.tokens()
                * headsPerRank
                * attended
                * (2.0 * a.kvLoraRank() + a.qkRopeHeadDim());
        bytes = step.sequences() * kvRead * kvBytesPerToken;
      } else {
        // expand the latent of the cached tokens to per-head keys/values, then dense attention.
        double expand =
            2.0
                * step.contextLen()
                * a.kvLoraRank()
                * headsPerRank
                * (a.qkNopeHeadDim() + a.vHeadDim());
        flops =
            expand + 2.0 * step.tokens() * headsPerRank * attended * (a.qkHeadDim() + a.vHeadDim());
        bytes = step.sequences() * kvRead * kvBytesPerToken;
      }
    } else {
      double kvHeadsPerRank = Math.max(1.0, (double) a.numKvHeads() / tp);
      flops = 4.0 * step.tokens() * headsPerRank * attended * a.headDim();
      bytes = step.sequences() * kvRead * kvBytesPerToken * kvHeadsPerRank / a.numKvHeads();
    }
    return new OpCost("attn.core", Category.ATTENTION, Kind.ATTENTION, flops, bytes, "bf16", 2);
  }

  private OpCost indexerScores(StepShape step) {
    IndexerShape ix = inventory.shape().indexer();
    // Every query scores every cached token with all indexer heads (fp8 dot products); each
    // sequence's indexer keys are read once. Replicated on every TP rank.
    double flops =
        2.0 * step.tokens() * step.attendedPerQuery() * ix.numHeads() * (ix.headDim() + 1);
    double bytes =
        step.sequences()
            * (double) step.contextLen()
            * KvLayout.indexerBytesPerToken(inventory.shape());
    return new OpCost(
        "attn.indexer_topk", Category.ATTENTION, Kind.ATTENTION, flops, bytes, "fp8", 3);
  }

  private String computeDtype(Weight w) {
    return quant.formatOf(w.role()).computeDtype();
  }

  private static OpCost misc(String name, int kernels) {
    return new OpCost(name, Category.LAUNCH_OTHER, Kind.MISC, 0, 0, "bf16", kernels);
  }

  private static String shortName(Weight w) {
    String n = w.name();
    return n.substring(n.lastIndexOf('.') + 1);
  }
}
