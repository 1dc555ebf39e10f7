package dev.ringmaster.cuda.model;

import dev.ringmaster.cuda.kernels.MlaPrefillAttention;
import dev.ringmaster.model.arch.RopeTable;
import dev.ringmaster.model.config.ModelConfig;

/**
 * The whole network for one step of {@code n} tokens whose inputs are in {@link StepInputs}:
 * embedding, decoder layers ({@code h += attn(norm(h)); h += mlp(norm(h))}, each residual add fused
 * into the next norm), final norm, LM head. Only launches work on the ops' stream, so a decode step
 * can be captured into a graph.
 */
final class DecoderStack {
  private final ModelConfig cfg;
  private final GpuWeights w;
  private final GpuOps ops;
  private final Activations act;
  private final StepInputs in;
  private final BlockPool pool;
  private final MlaBlock attention;
  private final FeedForwardBlock mlp;
  private final TensorParallelOps tp; // null: one GPU, no collectives
  private final float eps;
  private StepProfiler profiler;
  private PrefillSegments segments;
  private MlaPrefillAttention prefill;

  DecoderStack(
      ModelConfig cfg,
      GpuWeights w,
      GpuOps ops,
      Activations act,
      StepInputs in,
      BlockPool pool,
      RopeTable rope,
      GroupedExperts grouped) {
    this(
        cfg,
        w,
        ops,
        act,
        in,
        pool,
        new MlaBlock(cfg, rope),
        new FeedForwardBlock(cfg, grouped),
        null);
  }

  /**
   * The stack of a tensor-parallel rank: its blocks hold its heads and experts, and {@code tp}
   * (null for one GPU) adds the embedding, per-layer and LM-head collectives.
   */
  DecoderStack(
      ModelConfig cfg,
      GpuWeights w,
      GpuOps ops,
      Activations act,
      StepInputs in,
      BlockPool pool,
      MlaBlock attention,
      FeedForwardBlock mlp,
      TensorParallelOps tp) {
    this.cfg = cfg;
    this.w = w;
    this.ops = ops;
    this.act = act;
    this.in = in;
    this.pool = pool;
    this.attention = attention;
    this.mlp = mlp;
    this.tp = tp;
    this.eps = (float) cfg.rmsNormEps();
  }

  /**
   * Routes the attention of the next {@link #forward} calls by {@code segments} through {@code
   * prefill}'s GEMMs; {@code null} (decode, graphs) uses the split kernels for every token.
   */
  void usePrefillSegments(PrefillSegments segments, MlaPrefillAttention prefill) {
    this.segments = segments;
    this.prefill = prefill;
  }

  /** Profiles the ops launched until {@link #endProfile} (never while a graph is captured). */
  void beginProfile() {
    profiler = new StepProfiler(ops.stream);
  }

  /** Milliseconds per op group of the profiled launches. */
  java.util.Map<String, Double> endProfile() {
    java.util.Map<String, Double> ms = profiler.finish();
    profiler = null;
    return ms;
  }

  /** Charges the work launched since the last mark to {@code label} when profiling. */
  private void mark(String label) {
    if (profiler != null) {
      profiler.mark(label);
    }
  }

  /**
   * Runs {@code n} tokens through every layer; leaves the final-normed rows in {@code normed}.
   * {@code groupedExperts}: routed experts as per-expert GEMMs (prefill only, syncs with the host).
   * {@code mlaFusedTokens}: most tokens for which the attention takes the fused MLA launch (0:
   * never), the model's per-step choice.
   */
  void forward(int n, int splits, boolean groupedExperts, int mlaFusedTokens) {
    int h = cfg.hiddenSize();
    if (tp != null) {
      tp.embedding(act.hidden.ptr(), w.embed, in.ids.ptr(), n);
    } else {
      ops.embedding(act.hidden.ptr(), w.embed, in.ids.ptr(), n);
    }
    mark("embedding");
    long mlpOut = act.mlpOut.ptr();
    boolean mlpPartial = true;
    boolean profiled = profiler != null;
    mlp.deferCombine(tp == null && ops.tuning.combineIntoNorm() && !profiled);
    for (int l = 0; l < w.layers.length; l++) {
      LayerWeights lw = w.layers[l];
      if (l == 0) {
        ops.rmsNorm(act.normed.ptr(), act.hidden.ptr(), lw.inputNorm(), n, h, eps);
      } else {
        addRmsNorm(mlpOut, mlpPartial, lw.inputNorm(), n);
      }
      mark("norms");
      attention.forward(
          ops,
          act,
          in,
          lw.attention(),
          pool.layerPtr(l),
          pool.blockSize(),
          n,
          splits,
          mlaFusedTokens,
          segments,
          prefill,
          this::mark);
      addRmsNorm(act.attnOut.ptr(), true, lw.postAttentionNorm(), n);
      mark("norms");
      mlpOut = mlp.forward(ops, act, lw, n, groupedExperts, profiled, this::mark);
      mlpPartial = !mlp.replicatedOutput(lw);
    }
    addRmsNorm(mlpOut, mlpPartial, w.finalNorm, n);
    mark("norms");
  }

  /**
   * {@code hidden += x; normed = weight * rmsnorm(hidden)}; on a tensor-parallel rank a {@code
   * partial} {@code x} is this rank's partial sum, allreduced first (an all-to-all MoE output is
   * complete on every rank already). Where the MoE layer before left its experts' sum ({@link
   * FeedForwardBlock#takePendingCombine}), {@code x} holds only the shared experts' output and the
   * sum is added here.
   */
  private void addRmsNorm(long x, boolean partial, long weight, int n) {
    int h = cfg.hiddenSize();
    FeedForwardBlock.PendingCombine sum = mlp.takePendingCombine();
    if (sum != null) {
      // The MoE layer left its experts' sum: added here, in the norm's launch.
      ops.kernels.moeCombineRmsNorm(
          ops.stream,
          act.normed.ptr(),
          act.hidden.ptr(),
          sum.shared() ? x : 0,
          sum.pairRows(),
          sum.topK(),
          weight,
          n,
          h,
          eps);
    } else if (tp != null && partial) {
      tp.reduceAddRmsNorm(
          ops, act.normed.ptr(), act.hidden.ptr(), x, weight, n, h, eps, this::mark);
    } else {
      ops.addRmsNorm(act.normed.ptr(), act.hidden.ptr(), x, weight, n, h, eps);
    }
  }

  /**
   * Logits {@code [rows, vocab]} of {@code rows} final-normed rows at {@code x} into {@code
   * logits}.
   */
  void lmHead(long x, int rows) {
    if (tp != null) {
      tp.lmHead(ops, act.logits.ptr(), x, w.lmHead, rows, this::mark);
    } else {
      ops.linear(act.logits.ptr(), x, w.lmHead, rows);
    }
    mark("lm_head");
  }

  /** Greedy token of each of the first {@code rows} rows of {@code logits} into {@code argmax}. */
  void argmax(int rows) {
    ops.kernels.argmax(ops.stream, act.argmax.ptr(), act.logits.ptr(), rows, cfg.vocabSize());
  }

  /**
   * One decode step as a graph captures it: layers, LM head and argmax of all {@code n} rows
   * ({@code mlaFusedTokens} as for {@link #forward}).
   */
  void decodeStep(int n, int splits, int mlaFusedTokens) {
    forward(n, splits, false, mlaFusedTokens);
    lmHead(act.normed.ptr(), n);
    argmax(n);
  }
}
