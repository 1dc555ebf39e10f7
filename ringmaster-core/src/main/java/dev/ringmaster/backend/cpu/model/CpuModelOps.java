package dev.ringmaster.backend.cpu.model;

import dev.ringmaster.backend.cpu.CpuKernelContext;
import dev.ringmaster.backend.cpu.CpuMatmul;
import dev.ringmaster.backend.cpu.CpuOps;
import dev.ringmaster.model.arch.ParallelConfig;
import dev.ringmaster.model.arch.RankContext;
import dev.ringmaster.model.arch.RopeTable;
import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.model.config.MoeConfig;
import dev.ringmaster.model.ops.Act;
import dev.ringmaster.model.ops.AttentionWeights;
import dev.ringmaster.model.ops.FeedForwardWeights;
import dev.ringmaster.model.ops.IndexerWeights;
import dev.ringmaster.model.ops.LayerWeights;
import dev.ringmaster.model.ops.ModelOps;
import dev.ringmaster.model.ops.ModelWeights;
import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.KvCache;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;

/**
 * The CPU backend's ops for one rank and one step: f32 activations on the heap (a fresh array per
 * result, as big as the step), matrices in their disk format, collectives through the rank's
 * process group. A new instance serves each step, so steps on different threads do not meet.
 */
final class CpuModelOps implements ModelOps<CpuTensor> {
  /**
   * What every step of a rank shares: the attention cores and the MoE layers built over the
   * weights.
   */
  static final class Blocks {
    private final ModelConfig cfg;
    private final RankContext rank;
    private final CpuKernelContext kernels;
    private final CpuMlaAttention mla;
    private final CpuGqaAttention gqa;
    private final CpuIndexer indexer;
    private final CpuMoe[] moe;
    private final MlpTasks mlpTasks;

    /** The blocks over the weights {@code w} of rank {@code rank}, run on {@code kernels}. */
    Blocks(ModelConfig cfg, RankContext rank, ModelWeights<CpuTensor> w, CpuKernelContext kernels) {
      this.cfg = cfg;
      this.rank = rank;
      this.kernels = kernels;
      RopeTable rope = new RopeTable(cfg.rope(), cfg.ropeDim());
      int heads = rank.share(cfg.numHeads());
      this.mla =
          cfg.architecture().usesMla() ? new CpuMlaAttention(kernels, cfg, heads, rope) : null;
      this.indexer = cfg.sparseAttention() == null ? null : new CpuIndexer(kernels, cfg);
      this.gqa =
          cfg.architecture().usesMla()
              ? null
              : new CpuGqaAttention(
                  kernels, heads, rank.share(cfg.numKvHeads()), cfg.headDim(), rope);
      this.mlpTasks = new MlpTasks(kernels);
      List<LayerWeights<CpuTensor>> layers = w.layers();
      this.moe = new CpuMoe[layers.size()];
      for (int l = 0; l < moe.length; l++) {
        if (layers.get(l).feedForward() instanceof FeedForwardWeights.Moe<CpuTensor> m) {
          moe[l] = moeLayer(m);
        }
      }
    }

    /** The kernel context the blocks run on. */
    CpuKernelContext kernels() {
      return kernels;
    }

    private CpuMoe moeLayer(FeedForwardWeights.Moe<CpuTensor> w) {
      MoeConfig m = cfg.moe();
      ParallelConfig par = rank.parallel();
      CpuTensor.Experts experts = (CpuTensor.Experts) w.experts();
      Router router =
          new Router(
              kernels,
              m,
              CpuTensor.linear(w.router()).weight(),
              w.scoreBias() == null ? null : CpuTensor.vector(w.scoreBias()));
      boolean a2a = par.a2a() == ParallelConfig.MoeA2aBackend.ALL_TO_ALL && rank.size() > 1;
      return new CpuMoe(
          kernels,
          router,
          experts.experts(),
          par.expertParallel() ? par.placementFor(m.numExperts()) : null,
          rank.rank(),
          w.shared() == null ? null : dense(w.shared()),
          m.topK(),
          cfg.hiddenSize(),
          a2a ? rank : null,
          mlpTasks);
    }
  }

  private final Blocks blocks;
  private final ModelConfig cfg;
  private final RankContext rank;
  private final int hidden;
  private final EnumMap<Act, float[]> acts = new EnumMap<>(Act.class);
  private final int[] tokens;
  private final BatchLayout layout;
  private final KvCache[] caches;
  private final int[] logitRows;
  private float[] logits;

  /** Copies of the residual stream by capture slot ({@link #captureHidden}). */
  private final java.util.Map<Integer, float[]> captured = new java.util.HashMap<>();

  /** The last indexer selection of this step, for layers that share it (GLM-5). */
  private int[][] selection;

  /**
   * Ops for one step of {@code tokens}: their layout, caches and the rows whose logits are wanted.
   */
  CpuModelOps(Blocks blocks, int[] tokens, BatchLayout layout, KvCache[] caches, int[] logitRows) {
    this.blocks = blocks;
    this.cfg = blocks.cfg;
    this.rank = blocks.rank;
    this.hidden = cfg.hiddenSize();
    this.tokens = tokens;
    this.layout = layout;
    this.caches = caches;
    this.logitRows = logitRows;
  }

  private static DenseMlp dense(FeedForwardWeights.Dense<CpuTensor> w) {
    CpuTensor.GateUp gu = (CpuTensor.GateUp) w.gateUp();
    return new DenseMlp(gu.gate(), gu.up(), CpuTensor.linear(w.down()));
  }

  /** The logits {@code [logitRows, vocab]} of the step, once the forward pass has run. */
  float[] logits() {
    return logits;
  }

  /** The step's {@link Act#NORMED} rows {@code [tokens, hidden]}: after the final norm. */
  float[] normed() {
    return acts.get(Act.NORMED);
  }

  /**
   * An MTP layer's input: {@link Act#HIDDEN} {@code = ehProj . cat(enorm(HIDDEN), hnorm(h))} per
   * row, after {@link #embedding} put the step's tokens' embeddings in {@code HIDDEN}.
   *
   * @param incoming {@code [tokens, hidden]} the hidden state each row is paired with
   */
  void nextnInput(CpuTensor enorm, CpuTensor hnorm, CpuTensor ehProj, float[] incoming) {
    int n = n();
    int h = hidden;
    if (incoming.length != n * h) {
      throw new IllegalArgumentException(
          "an MTP step of "
              + n
              + " rows needs "
              + n * h
              + " hidden values, got "
              + incoming.length);
    }
    double eps = cfg.rmsNormEps();
    float[] e = acts.get(Act.HIDDEN).clone();
    float[] hs = incoming.clone();
    CpuOps.rmsNorm(e, 0, n, h, h, CpuTensor.vector(enorm), eps);
    CpuOps.rmsNorm(hs, 0, n, h, h, CpuTensor.vector(hnorm), eps);
    float[] cat = new float[n * 2 * h];
    for (int t = 0; t < n; t++) {
      System.arraycopy(e, t * h, cat, t * 2 * h, h);
      System.arraycopy(hs, t * h, cat, t * 2 * h + h, h);
    }
    float[] out = new float[n * h];
    CpuTensor.linear(ehProj).apply(out, cat, n);
    acts.put(Act.HIDDEN, out);
  }

  private int n() {
    return tokens.length;
  }

  @Override
  public void captureHidden(int slot) {
    captured.put(slot, acts.get(Act.HIDDEN).clone());
  }

  /**
   * The captured slots {@code 0 .. slots - 1} concatenated per token: {@code [tokens, slots *
   * hidden]}.
   */
  float[] captured(int slots) {
    int n = n();
    int h = hidden;
    float[] out = new float[n * slots * h];
    for (int s = 0; s < slots; s++) {
      float[] rows = captured.get(s);
      if (rows == null) {
        throw new IllegalStateException("capture slot " + s + " was not filled by the forward");
      }
      for (int t = 0; t < n; t++) {
        System.arraycopy(rows, t * h, out, (t * slots + s) * h, h);
      }
    }
    return out;
  }

  @Override
  public void embedding(CpuTensor table) {
    Linear embed = CpuTensor.linear(table);
    int n = n();
    int h = hidden;
    float[] out = new float[n * h];
    int v0 = rank.start(cfg.vocabSize());
    int vn = embed.out();
    for (int t = 0; t < n; t++) {
      int id = tokens[t];
      if (id < 0 || id >= cfg.vocabSize()) {
        throw new IllegalArgumentException(
            "token id " + id + " is outside the vocabulary (0.." + (cfg.vocabSize() - 1) + ")");
      }
      // Vocab-parallel: the rank owning the row contributes it, the others zeros; then allreduce.
      if (id >= v0 && id < v0 + vn) {
        CpuMatmul.loadRow(blocks.kernels, embed.weight(), id - v0, out, t * h);
      }
    }
    rank.allReduce(out, n * h);
    acts.put(Act.HIDDEN, out);
  }

  @Override
  public void rmsNorm(Act out, Act x, CpuTensor weight, double eps) {
    float[] w = CpuTensor.vector(weight);
    float[] src = acts.get(x);
    float[] buf = out == x ? src : Arrays.copyOf(src, src.length);
    CpuOps.rmsNorm(buf, 0, buf.length / w.length, w.length, w.length, w, eps);
    acts.put(out, buf);
  }

  @Override
  public void addRmsNorm(Act x, boolean partialSum, CpuTensor weight, double eps) {
    int size = n() * hidden;
    float[] xs = acts.get(x);
    if (partialSum) {
      rank.allReduce(xs, size);
    }
    float[] h = acts.get(Act.HIDDEN);
    CpuOps.addInPlace(h, xs, size);
    float[] normed = Arrays.copyOf(h, size);
    CpuOps.rmsNorm(normed, 0, n(), hidden, hidden, CpuTensor.vector(weight), eps);
    acts.put(Act.NORMED, normed);
  }

  @Override
  public void linear(Act y, Act x, CpuTensor w) {
    Linear l = CpuTensor.linear(w);
    float[] out = new float[n() * l.out()];
    l.apply(out, acts.get(x), n());
    acts.put(y, out);
  }

  @Override
  public void linear2(Act y1, CpuTensor w1, Act y2, CpuTensor w2, Act x) {
    Linear l1 = CpuTensor.linear(w1);
    Linear l2 = CpuTensor.linear(w2);
    float[] out1 = new float[n() * l1.out()];
    float[] out2 = new float[n() * l2.out()];
    Linear.applyBoth(l1, out1, l2, out2, acts.get(x), n());
    acts.put(y1, out1);
    acts.put(y2, out2);
  }

  @Override
  public void mlaAttention(AttentionWeights.Mla<CpuTensor> w, int layer) {
    attendMla(w, layer, null);
  }

  /** MLA of the step's tokens over all their positions, or over {@code selected} ones. */
  private void attendMla(AttentionWeights.Mla<CpuTensor> w, int layer, int[][] selected) {
    float[] kvB = ((CpuTensor.Latent) w.kvB()).values();
    acts.put(
        Act.ATTN,
        blocks.mla.forward(
            acts.get(Act.Q),
            acts.get(Act.KVA),
            CpuTensor.vector(w.kvANorm()),
            kvB,
            layout,
            caches,
            layer,
            selected));
  }

  @Override
  public void mlaSparseAttention(
      AttentionWeights.Mla<CpuTensor> w, IndexerWeights<CpuTensor> indexer, int layer) {
    if (indexer != null) {
      selection =
          blocks.indexer.select(
              acts.get(Act.NORMED), acts.get(Act.QA), indexer, layout, caches, layer);
    } else if (selection == null) {
      throw new IllegalStateException(
          "layer " + layer + " shares the indexer selection but no earlier layer made one");
    }
    attendMla(w, layer, selection);
  }

  @Override
  public void gqaAttention(AttentionWeights.Gqa<CpuTensor> w, int layer) {
    if (w.qNorm() != null) {
      rmsNorm(Act.Q, Act.Q, w.qNorm(), cfg.rmsNormEps());
    }
    if (w.kNorm() != null) {
      rmsNorm(Act.K, Act.K, w.kNorm(), cfg.rmsNormEps());
    }
    acts.put(
        Act.ATTN,
        blocks.gqa.forward(
            acts.get(Act.Q), acts.get(Act.K), acts.get(Act.V), layout, caches, layer));
  }

  @Override
  public void denseMlp(Act out, Act x, FeedForwardWeights.Dense<CpuTensor> w) {
    float[] o = new float[n() * hidden];
    if (n() >= MlpTasks.MIN_TOKENS) {
      blocks.mlpTasks.forward(dense(w), o, acts.get(x), n());
    } else {
      dense(w).forward(o, acts.get(x), n());
    }
    acts.put(out, o);
  }

  @Override
  public boolean moe(Act out, Act x, FeedForwardWeights.Moe<CpuTensor> w, int layer) {
    float[] o = new float[n() * hidden];
    blocks.moe[layer].forward(o, acts.get(x), n());
    acts.put(out, o);
    return blocks.moe[layer].outputReplicated();
  }

  @Override
  public void lmHead(CpuTensor head) {
    Linear lm = CpuTensor.linear(head);
    float[] normed = acts.get(Act.NORMED);
    int h = hidden;
    int rows = logitRows.length;
    float[] sel = new float[rows * h];
    for (int r = 0; r < rows; r++) {
      System.arraycopy(normed, logitRows[r] * h, sel, r * h, h);
    }
    int vocab = cfg.vocabSize();
    int vn = lm.out();
    float[] local = new float[rows * vn];
    CpuMatmul.matmul(blocks.kernels, local, sel, rows, lm.weight());
    if (rank.size() == 1) {
      logits = local;
      return;
    }
    // Gather every rank's vocabulary slice, then lay the rows out as [rows, vocab].
    float[] gathered = new float[rank.size() * rows * vn];
    rank.group().allGather(local, 0, rows * vn, gathered);
    float[] all = new float[rows * vocab];
    for (int r = 0; r < rank.size(); r++) {
      for (int i = 0; i < rows; i++) {
        System.arraycopy(gathered, (r * rows + i) * vn, all, i * vocab + r * vn, vn);
      }
    }
    logits = all;
  }
}
