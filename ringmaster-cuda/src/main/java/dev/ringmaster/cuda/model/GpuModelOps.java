package dev.ringmaster.cuda.model;

import dev.ringmaster.cuda.kernels.MlaPrefillAttention;
import dev.ringmaster.model.arch.DecoderModel;
import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.model.ops.Act;
import dev.ringmaster.model.ops.AttentionWeights;
import dev.ringmaster.model.ops.FeedForwardWeights;
import dev.ringmaster.model.ops.IndexerWeights;
import dev.ringmaster.model.ops.LayerWeights;
import dev.ringmaster.model.ops.ModelOps;
import dev.ringmaster.model.ops.ModelWeights;
import java.util.List;
import java.util.Map;

/**
 * The GPU backend's ops for one rank, and the step runner around the architecture: every op
 * launches work on the rank's stream over the fixed activation buffers ({@link Activations}), so a
 * decode step runs the same launches eagerly, profiled or captured into a graph. The kernel choices
 * live in the ops (linear: GEMV or cuBLAS; attention: {@link GpuMlaAttention} / {@link
 * GpuGqaAttention}; MoE: {@link GpuMoe}, which may leave its final sum to the next {@link
 * #addRmsNorm}); under tensor parallelism {@link TensorParallelOps} adds the collectives. The
 * step's shape (tokens, KV splits, whether experts run as per-expert GEMMs, the fused-MLA limit,
 * the prefill segments) is set by {@link #forward} and {@link #decodeStep} before the architecture
 * runs. GPU thread only.
 */
final class GpuModelOps implements ModelOps<GpuTensor> {
  private final ModelConfig cfg;
  private final DecoderModel model;
  private final ModelWeights<GpuTensor> weights;
  private final GpuOps ops;
  private final Activations act;
  private final StepInputs in;
  private final BlockPool pool;
  private final GpuMlaAttention mla;
  private final GpuGqaAttention gqa;
  private final GpuMoe moe;
  private final TensorParallelOps tp; // null: one GPU, no collectives
  private final GpuSparseAttention dsa; // null: no sparse attention
  private final KernelWeights.MoeWeights[] moeWeights;
  private StepProfiler profiler;
  private PrefillSegments segments;
  private MlaPrefillAttention prefill;
  private StepHiddenStates hiddenStates; // null: the step captures no layer inputs

  // The step being launched.
  private int n;
  private int splits;
  private boolean groupedExperts;
  private int mlaFusedTokens;
  private long mlpOut;
  private long headInput;
  private int headRows;
  private boolean sparse;
  private int stepMaxContext;
  private List<GpuSparseAttention.Run> stepRuns;
  private boolean selectionMade;

  /**
   * The ops of a rank whose attention is {@code mla} or {@code gqa} (the other null) and whose MoE
   * layers run through {@code moe}; {@code tp} (null for one GPU) adds the collectives.
   */
  GpuModelOps(
      ModelConfig cfg,
      ModelWeights<GpuTensor> weights,
      GpuOps ops,
      Activations act,
      StepInputs in,
      BlockPool pool,
      GpuMlaAttention mla,
      GpuGqaAttention gqa,
      GpuMoe moe,
      TensorParallelOps tp,
      GpuSparseAttention dsa) {
    this.cfg = cfg;
    this.model = DecoderModel.of(cfg);
    this.weights = weights;
    this.ops = ops;
    this.act = act;
    this.in = in;
    this.pool = pool;
    this.mla = mla;
    this.gqa = gqa;
    this.moe = moe;
    this.tp = tp;
    this.dsa = dsa;
    List<LayerWeights<GpuTensor>> layers = weights.layers();
    moeWeights = new KernelWeights.MoeWeights[layers.size()];
    for (int l = 0; l < layers.size(); l++) {
      if (layers.get(l).feedForward() instanceof FeedForwardWeights.Moe<GpuTensor> m) {
        GpuTensor.Experts experts = (GpuTensor.Experts) m.experts();
        moeWeights[l] =
            new KernelWeights.MoeWeights(
                GpuTensor.mat(m.router()),
                GpuTensor.vec(m.scoreBias()),
                experts.w13(),
                experts.w2(),
                experts.s13(),
                experts.s2(),
                experts.g13(),
                experts.g2(),
                m.shared() == null ? null : dense(m.shared()));
      }
    }
  }

  private static KernelWeights.DenseWeights dense(FeedForwardWeights.Dense<GpuTensor> d) {
    GpuTensor.GateUp gu = (GpuTensor.GateUp) d.gateUp();
    return new KernelWeights.DenseWeights(gu.matrix(), GpuTensor.mat(d.down()), gu.inter());
  }

  /**
   * Routes the attention of the next {@link #forward} calls by {@code segments} through {@code
   * prefill}'s GEMMs; {@code null} (decode, graphs) uses the split kernels for every token.
   */
  void usePrefillSegments(PrefillSegments segments, MlaPrefillAttention prefill) {
    this.segments = segments;
    this.prefill = prefill;
  }

  /**
   * Whether the next {@link #forward} / {@link #decodeStep} calls attend sparsely (DeepSeek Sparse
   * Attention: indexer scores, top-k and attention over the selection) or densely (every row's
   * context is at most {@code index_topk}, where both are equal by definition; the indexer then
   * only caches its keys). {@code maxContext}: the steps' longest context, or 0 where the host does
   * not know it (captured decode steps). {@code runs}: a prefill chunk's runs of one sequence,
   * whose indexer scores may take GEMMs (null: the CUDA-core score kernel for every token).
   */
  void useSparseAttention(boolean sparse, int maxContext, List<GpuSparseAttention.Run> runs) {
    this.sparse = sparse;
    this.stepMaxContext = maxContext;
    this.stepRuns = runs;
  }

  /**
   * Copies the residual stream entering the layers {@code states} lists to the host as the next
   * {@link #forward} calls pass them ({@code null}: capture nothing, as graphs are captured). The
   * copies wait for the stream, so such steps run eagerly.
   */
  void captureHiddenInto(StepHiddenStates states) {
    this.hiddenStates = states;
  }

  /** Profiles the ops launched until {@link #endProfile} (never while a graph is captured). */
  void beginProfile() {
    profiler = new StepProfiler(ops.stream);
  }

  /** Milliseconds per op group of the profiled launches. */
  Map<String, Double> endProfile() {
    Map<String, Double> ms = profiler.finish();
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
    this.n = n;
    this.splits = splits;
    this.groupedExperts = groupedExperts;
    this.mlaFusedTokens = mlaFusedTokens;
    selectionMade = false;
    if (hiddenStates != null) {
      model.layers(this, weights, hiddenStates.capture());
    } else {
      model.layers(this, weights);
    }
  }

  /** Logits {@code [rows, vocab]} of {@code rows} final-normed rows at {@code x}. */
  void lmHead(long x, int rows) {
    headInput = x;
    headRows = rows;
    model.logits(this, weights);
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

  private long ptr(Act a) {
    return switch (a) {
      case HIDDEN -> act.hidden.ptr();
      case NORMED -> act.normed.ptr();
      case ATTN_OUT -> act.attnOut.ptr();
      case MLP_OUT -> mlpOut;
      case QA -> act.qa.ptr();
      case Q -> act.q.ptr();
      case KVA -> act.kva.ptr();
      case K -> act.k.ptr();
      case V -> act.v.ptr();
      case ATTN -> act.attn.ptr();
    };
  }

  @Override
  public void embedding(GpuTensor table) {
    DeviceMatrix m = GpuTensor.mat(table);
    if (tp != null) {
      tp.embedding(act.hidden.ptr(), m, in.ids.ptr(), n);
    } else {
      ops.embedding(act.hidden.ptr(), m, in.ids.ptr(), n);
    }
    mark("embedding");
    mlpOut = act.mlpOut.ptr();
    moe.deferCombine(tp == null && ops.tuning.combineIntoNorm());
  }

  @Override
  public void rmsNorm(Act out, Act x, GpuTensor weight, double eps) {
    GpuTensor.Vec w = (GpuTensor.Vec) weight;
    int rows = out == Act.NORMED ? n : n * (width(x) / w.n());
    ops.rmsNorm(ptr(out), ptr(x), w.ptr(), rows, w.n(), (float) eps);
    if (out == Act.NORMED) {
      mark("norms");
    }
  }

  /** Row width of the per-head activations that {@link #rmsNorm} may normalise in place. */
  private int width(Act a) {
    return switch (a) {
      case QA -> cfg.qLoraRank();
      default -> throw new IllegalArgumentException("no in-place norm of " + a + " on the GPU");
    };
  }

  /**
   * {@code hidden += x; normed = weight * rmsnorm(hidden)}; on a tensor-parallel rank a {@code
   * partial} {@code x} is this rank's partial sum, allreduced first (an all-to-all MoE output is
   * complete on every rank already). Where the MoE layer before left its experts' sum ({@link
   * GpuMoe#takePendingCombine}), {@code x} holds only the shared experts' output and the sum is
   * added here.
   */
  @Override
  public void addRmsNorm(Act xAct, boolean partial, GpuTensor weight, double epsD) {
    int h = cfg.hiddenSize();
    long x = ptr(xAct);
    long w = GpuTensor.vec(weight);
    float eps = (float) epsD;
    GpuMoe.PendingCombine sum = moe.takePendingCombine();
    if (sum != null) {
      // The MoE layer left its experts' sum: added here, in the norm's launch.
      ops.kernels
          .moe()
          .moeCombineRmsNorm(
              ops.stream,
              act.normed.ptr(),
              act.hidden.ptr(),
              sum.shared() ? x : 0,
              sum.pairRows(),
              sum.topK(),
              w,
              n,
              h,
              eps);
    } else if (tp != null && partial) {
      tp.reduceAddRmsNorm(ops, act.normed.ptr(), act.hidden.ptr(), x, w, n, h, eps, this::mark);
    } else {
      ops.addRmsNorm(act.normed.ptr(), act.hidden.ptr(), x, w, n, h, eps);
    }
    mark("norms");
  }

  @Override
  public void linear(Act y, Act x, GpuTensor w) {
    ops.linear(ptr(y), ptr(x), GpuTensor.mat(w), n);
    if (y == Act.ATTN_OUT) {
      mark(mla != null ? "mla.o_proj" : "gqa.o_proj");
    }
  }

  @Override
  public void linear2(Act y1, GpuTensor w1, Act y2, GpuTensor w2, Act x) {
    ops.linear2(ptr(y1), GpuTensor.mat(w1), ptr(y2), GpuTensor.mat(w2), ptr(x), n);
  }

  @Override
  public void mlaAttention(AttentionWeights.Mla<GpuTensor> w, int layer) {
    mla.forward(
        ops,
        act,
        in,
        GpuTensor.vec(w.kvANorm()),
        GpuTensor.mat(w.kvB()),
        pool.layerPtr(layer),
        pool.blockSize(),
        n,
        splits,
        mlaFusedTokens,
        segments,
        prefill,
        null,
        this::mark);
  }

  @Override
  public void mlaSparseAttention(
      AttentionWeights.Mla<GpuTensor> w, IndexerWeights<GpuTensor> indexer, int layer) {
    if (indexer != null) {
      dsa.index(ops, act, in, pool, indexer, layer, n, sparse, stepMaxContext, stepRuns);
      selectionMade = true;
      mark("dsa.indexer");
    } else if (!selectionMade) {
      throw new IllegalStateException(
          "layer " + layer + " shares the indexer selection but no earlier layer made one");
    }
    mla.forward(
        ops,
        act,
        in,
        GpuTensor.vec(w.kvANorm()),
        GpuTensor.mat(w.kvB()),
        pool.layerPtr(layer),
        pool.blockSize(),
        n,
        splits,
        mlaFusedTokens,
        sparse ? null : segments,
        prefill,
        sparse ? new GpuMlaAttention.Selection(dsa.selectionPtr(), dsa.topK()) : null,
        this::mark);
  }

  @Override
  public void gqaAttention(AttentionWeights.Gqa<GpuTensor> w, int layer) {
    gqa.forward(
        ops,
        act,
        in,
        GpuTensor.vec(w.qNorm()),
        GpuTensor.vec(w.kNorm()),
        pool.layerPtr(layer),
        pool.blockSize(),
        n,
        splits);
    mark("gqa.attention");
  }

  @Override
  public void denseMlp(Act out, Act x, FeedForwardWeights.Dense<GpuTensor> w) {
    KernelWeights.DenseWeights d = dense(w);
    mlpOut = act.mlpOut.ptr();
    ops.swiglu(mlpOut, ptr(x), d, act.gateUp.ptr(), act.act.ptr(), n);
    mark("mlp.dense");
  }

  @Override
  public boolean moe(Act out, Act x, FeedForwardWeights.Moe<GpuTensor> w, int layer) {
    mlpOut =
        moe.forward(
            ops,
            act,
            moeWeights[layer],
            n,
            groupedExperts,
            ops.tuning.moeSkipPaddingRows() ? in.liveTokens.ptr() : 0L,
            this::mark);
    return moe.replicatedOutput();
  }

  /** The residual stream (complete on this single GPU) into the step's host copies. */
  @Override
  public void captureHidden(int slot) {
    if (hiddenStates == null) {
      throw new IllegalStateException(
          "layer " + slot + " capture asked for outside a capture step");
    }
    hiddenStates.layerInput(slot, act.hidden, ops.stream);
  }

  @Override
  public void lmHead(GpuTensor head) {
    if (tp != null) {
      tp.lmHead(ops, act.logits.ptr(), headInput, GpuTensor.mat(head), headRows, this::mark);
    } else {
      ops.linear(act.logits.ptr(), headInput, GpuTensor.mat(head), headRows);
    }
    mark("lm_head");
  }
}
