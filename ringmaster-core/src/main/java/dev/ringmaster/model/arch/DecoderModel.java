package dev.ringmaster.model.arch;

import static dev.ringmaster.model.ops.Act.ATTN_OUT;
import static dev.ringmaster.model.ops.Act.HIDDEN;
import static dev.ringmaster.model.ops.Act.MLP_OUT;
import static dev.ringmaster.model.ops.Act.NORMED;

import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.model.config.MoeConfig;
import dev.ringmaster.model.ops.ExpertTensors;
import dev.ringmaster.model.ops.FeedForwardWeights;
import dev.ringmaster.model.ops.LayerWeights;
import dev.ringmaster.model.ops.ModelOps;
import dev.ringmaster.model.ops.ModelWeights;
import dev.ringmaster.model.ops.MtpWeights;
import dev.ringmaster.model.ops.WeightSource;
import dev.ringmaster.model.ops.WeightSource.Slice;
import dev.ringmaster.runtime.HiddenCapture;
import dev.ringmaster.util.Progress;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.IntStream;

/**
 * The decoder-only mixture-of-experts transformer every supported family shares, written once for
 * every backend and rank layout: embedding, pre-norm decoder layers ({@code h += attn(norm(h)); h
 * += mlp(norm(h))}, each residual add fused into the next norm), final norm and LM head. Its
 * attention comes from the model's {@link AttentionFamily}; a layer's MLP is dense below {@code
 * first_k_dense_replace} and a mixture of experts from there.
 *
 * <p>Loading asks a {@link WeightSource} for this rank's share of every tensor: its heads, its
 * share of every MLP's intermediate dimension, and either its share of every expert (tensor
 * parallelism) or whole experts of its own range (expert parallelism); norms, routers and the MLA
 * down-projections are replicated, embedding and LM head hold a slice of the vocabulary.
 */
public final class DecoderModel {
  private final ModelConfig cfg;
  private final AttentionFamily family;

  private DecoderModel(ModelConfig cfg, AttentionFamily family) {
    this.cfg = cfg;
    this.family = family;
  }

  /** The model of {@code cfg}'s architecture. */
  public static DecoderModel of(ModelConfig cfg) {
    return new DecoderModel(cfg, AttentionFamily.of(cfg));
  }

  /** The configuration. */
  public ModelConfig config() {
    return cfg;
  }

  /**
   * Runs one step: the token ids, positions and caches are the ones {@code ops} was given; ends
   * with the logits of the requested rows.
   */
  public <T> void forward(ModelOps<T> ops, ModelWeights<T> w) {
    layers(ops, w);
    logits(ops, w);
  }

  /** The logits of the requested rows of the final-normed hidden state ({@link #layers}). */
  public <T> void logits(ModelOps<T> ops, ModelWeights<T> w) {
    ops.lmHead(w.lmHead());
  }

  /**
   * Runs the step's tokens through the embedding, every layer and the final norm, which leaves them
   * in {@link dev.ringmaster.model.ops.Act#NORMED}.
   */
  public <T> void layers(ModelOps<T> ops, ModelWeights<T> w) {
    layers(ops, w, HiddenCapture.FINAL);
  }

  /**
   * {@link #layers}, also capturing the residual stream entering each layer {@code capture} lists
   * ({@link ModelOps#captureHidden}, slot {@code i} for entry {@code i}).
   */
  public <T> void layers(ModelOps<T> ops, ModelWeights<T> w, HiddenCapture capture) {
    capture.check(w.layers().size());
    ops.embedding(w.embed());
    blocks(ops, w.layers(), w.finalNorm(), capture);
  }

  /**
   * One multi-token-prediction layer over {@link dev.ringmaster.model.ops.Act#HIDDEN}, which the
   * backend has set to {@code eh_proj(cat(enorm(embed(token)), hnorm(hidden)))}: the decoder layer
   * (attention and MoE as layer 0 of the step's caches and blocks) and {@code shared_head.norm},
   * which leaves the result in {@link dev.ringmaster.model.ops.Act#NORMED} for {@link #logits}.
   */
  public <T> void mtpLayer(ModelOps<T> ops, MtpWeights<T> w) {
    blocks(ops, List.of(w.layer()), w.sharedHeadNorm(), HiddenCapture.FINAL);
  }

  /**
   * Decoder layers over {@code HIDDEN}, then {@code finalNorm} into {@code NORMED}; the residual
   * stream entering the layers {@code capture} lists is captured.
   */
  private <T> void blocks(
      ModelOps<T> ops, List<LayerWeights<T>> layers, T finalNorm, HiddenCapture capture) {
    double eps = cfg.rmsNormEps();
    boolean mlpPartial = true;
    for (int l = 0; l < layers.size(); l++) {
      LayerWeights<T> lw = layers.get(l);
      if (l == 0) {
        ops.rmsNorm(NORMED, HIDDEN, lw.inputNorm(), eps);
      } else {
        ops.addRmsNorm(MLP_OUT, mlpPartial, lw.inputNorm(), eps);
      }
      capture(ops, capture, l); // HIDDEN is now layer l's input
      family.forward(ops, lw.attention(), l);
      ops.addRmsNorm(ATTN_OUT, true, lw.postAttentionNorm(), eps);
      mlpPartial =
          switch (lw.feedForward()) {
            case FeedForwardWeights.Dense<T> d -> {
              ops.denseMlp(MLP_OUT, NORMED, d);
              yield true;
            }
            case FeedForwardWeights.Moe<T> m -> !ops.moe(MLP_OUT, NORMED, m, l);
          };
    }
    ops.addRmsNorm(MLP_OUT, mlpPartial, finalNorm, eps);
    capture(ops, capture, layers.size());
  }

  private static <T> void capture(ModelOps<T> ops, HiddenCapture capture, int layer) {
    List<Integer> wanted = capture.layerInputs();
    for (int slot = 0; slot < wanted.size(); slot++) {
      if (wanted.get(slot) == layer) {
        ops.captureHidden(slot);
      }
    }
  }

  /** Loads this rank's weights; {@code progress} (or null) counts the layers. */
  public <T> ModelWeights<T> load(WeightSource<T> src, RankContext rank, Progress progress) {
    int v = cfg.vocabSize();
    int h = cfg.hiddenSize();
    Slice vocab = new Slice(rank.start(v), rank.share(v));
    T embed = src.linearRows("model.embed_tokens", v, h, vocab, false);
    List<LayerWeights<T>> layers = new ArrayList<>(cfg.numLayers());
    for (int l = 0; l < cfg.numLayers(); l++) {
      layers.add(layer(src, rank, l));
      if (progress != null) {
        progress.step(1);
      }
    }
    T norm = src.vector("model.norm.weight", h);
    T head =
        cfg.tieWordEmbeddings() && !src.contains("lm_head.weight")
            ? embed
            : src.linearRows("lm_head", v, h, vocab, false);
    return new ModelWeights<>(embed, List.copyOf(layers), norm, head);
  }

  /** The name of the tensor that marks MTP layer {@code j} as present in a checkpoint. */
  public String mtpMarker(int j) {
    return "model.layers." + (cfg.numLayers() + j) + ".eh_proj.weight";
  }

  /**
   * MTP layer {@code j} (of {@code num_nextn_predict_layers}), stored as decoder layer {@code
   * num_hidden_layers + j} plus {@code enorm}, {@code hnorm}, {@code eh_proj} and {@code
   * shared_head.norm}; its decoder layer is shaped as the last main layer (a mixture of experts
   * when that one is). The copies of the embedding and LM head some checkpoints store beside it are
   * not read: the main model's are used. Loaded whole on one rank.
   */
  public <T> MtpWeights<T> loadMtp(WeightSource<T> src, RankContext rank, int j) {
    if (j < 0 || j >= cfg.numNextnPredictLayers()) {
      throw new IllegalArgumentException(
          "MTP layer "
              + j
              + " does not exist: the config has num_nextn_predict_layers "
              + cfg.numNextnPredictLayers());
    }
    if (rank.size() > 1) {
      throw new IllegalArgumentException(
          "MTP layers load on a single rank only (tensor/expert parallel size 1)");
    }
    int l = cfg.numLayers() + j;
    String p = "model.layers." + l + ".";
    int h = cfg.hiddenSize();
    return new MtpWeights<>(
        src.vector(p + "enorm.weight", h),
        src.vector(p + "hnorm.weight", h),
        src.linearRows(p + "eh_proj", h, 2 * h, Slice.all(h), false),
        layer(src, rank, l, cfg.isMoeLayer(cfg.numLayers() - 1)),
        src.vector(p + "shared_head.norm.weight", h));
  }

  private <T> LayerWeights<T> layer(WeightSource<T> src, RankContext rank, int l) {
    return layer(src, rank, l, cfg.isMoeLayer(l));
  }

  private <T> LayerWeights<T> layer(WeightSource<T> src, RankContext rank, int l, boolean moe) {
    String p = "model.layers." + l + ".";
    int h = cfg.hiddenSize();
    return new LayerWeights<>(
        src.vector(p + "input_layernorm.weight", h),
        family.load(src, p + "self_attn", l, rank),
        src.vector(p + "post_attention_layernorm.weight", h),
        moe
            ? moe(src, rank, p + "mlp")
            : dense(src, rank, p + "mlp", cfg.intermediateSize(), true));
  }

  /** A SwiGLU MLP; {@code split} shards its intermediate dimension across the ranks. */
  private <T> FeedForwardWeights.Dense<T> dense(
      WeightSource<T> src, RankContext rank, String p, int inter, boolean split) {
    int h = cfg.hiddenSize();
    Slice part = split ? new Slice(rank.start(inter), rank.share(inter)) : Slice.all(inter);
    boolean downBias = src.contains(p + ".down_proj.bias") && (!split || rank.rank() == 0);
    return new FeedForwardWeights.Dense<>(
        src.gateUp(p + ".gate_proj", p + ".up_proj", inter, h, part),
        src.linearCols(p + ".down_proj", h, inter, part, downBias));
  }

  private <T> FeedForwardWeights.Moe<T> moe(WeightSource<T> src, RankContext rank, String p) {
    MoeConfig m = cfg.moe();
    int h = cfg.hiddenSize();
    int e = m.numExperts();
    int inter = m.expertIntermediateSize();
    ParallelConfig par = rank.parallel();
    boolean ep = par.expertParallel();
    int[] owned = ep ? par.placementFor(e).expertsOf(rank.rank()) : IntStream.range(0, e).toArray();
    // Under EP each owned expert is whole; under TP every expert is split by intermediate dim.
    Slice part = ep ? Slice.all(inter) : new Slice(rank.start(inter), rank.share(inter));
    boolean a2a = par.a2a() == ParallelConfig.MoeA2aBackend.ALL_TO_ALL && rank.size() > 1;
    return new FeedForwardWeights.Moe<>(
        src.linearRows(p + ".gate", e, h, Slice.all(e), false),
        m.hasScoreCorrectionBias() ? src.vector(p + ".gate.e_score_correction_bias", e) : null,
        src.experts(new ExpertTensors(p + ".experts"), e, owned, h, inter, part),
        m.sharedIntermediateSize() > 0
            ? dense(src, rank, p + ".shared_experts", m.sharedIntermediateSize(), !a2a)
            : null);
  }
}
