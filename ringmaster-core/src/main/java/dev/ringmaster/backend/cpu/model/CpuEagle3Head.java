package dev.ringmaster.backend.cpu.model;

import dev.ringmaster.backend.cpu.CpuKernelContext;
import dev.ringmaster.backend.cpu.CpuMatmul;
import dev.ringmaster.backend.cpu.CpuOps;
import dev.ringmaster.model.ModelLoadException;
import dev.ringmaster.model.arch.RopeTable;
import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.model.config.QuantizationConfig;
import dev.ringmaster.model.eagle.Eagle3HeadConfig;
import dev.ringmaster.model.eagle.Eagle3Tensors;
import dev.ringmaster.model.ops.ModelWeights;
import dev.ringmaster.model.weights.WeightStore;
import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.DraftHead;
import dev.ringmaster.runtime.HiddenCapture;
import dev.ringmaster.runtime.HiddenLogits;
import dev.ringmaster.runtime.KvCache;
import java.lang.foreign.Arena;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * An EAGLE-3 head on the CPU, over a target {@link CausalLm}: row {@code j} takes the target's
 * embedding of its token and a hidden state {@code h} (the target's three captured layers folded by
 * {@code fc}, or the head's own previous output), attends with {@code cat(input_layernorm(embed),
 * hidden_norm(h))} as the q/k/v input and {@code h} as the residual, runs the SwiGLU MLP, and
 * predicts through {@code norm} and its own LM head; the draft vocabulary is mapped to target ids
 * by {@code d2t} (logits of tokens outside it are minus infinity). Its output hidden state is the
 * residual stream before {@code norm}, as SGLang chains it.
 */
final class CpuEagle3Head implements DraftHead {
  private final Eagle3HeadConfig cfg;
  private final WeightStore store;
  private final Arena copies;
  private final CpuKernelContext kernels;
  private final Linear embed;
  private final Linear fc;
  private final float[] inputNorm;
  private final float[] hiddenNorm;
  private final Linear q;
  private final Linear k;
  private final Linear v;
  private final Linear o;
  private final float[] postNorm;
  private final DenseMlp mlp;
  private final float[] norm;
  private final Linear lmHead;
  private final int[] hotIds;
  private final int vocab;
  private final CpuGqaAttention attention;
  private final HiddenCapture capture;

  private CpuEagle3Head(
      Eagle3HeadConfig cfg,
      WeightStore store,
      Arena copies,
      CpuKernelContext kernels,
      Linear embed,
      Eagle3Tensors.Loaded<Linear, float[]> w,
      Linear lmHead,
      int[] hotIds,
      int vocab,
      HiddenCapture capture) {
    this.cfg = cfg;
    this.store = store;
    this.copies = copies;
    this.kernels = kernels;
    this.embed = embed;
    this.fc = w.fc();
    this.inputNorm = w.inputNorm();
    this.hiddenNorm = w.hiddenNorm();
    this.q = w.q();
    this.k = w.k();
    this.v = w.v();
    this.o = w.o();
    this.postNorm = w.postNorm();
    this.mlp = new DenseMlp(w.gate(), w.up(), w.down());
    this.norm = w.norm();
    this.lmHead = lmHead;
    this.hotIds = hotIds;
    this.vocab = vocab;
    this.capture = capture;
    this.attention =
        new CpuGqaAttention(
            kernels,
            cfg.numHeads(),
            cfg.numKvHeads(),
            cfg.headDim(),
            new RopeTable(cfg.rope(), cfg.headDim()));
  }

  /**
   * Loads the head in {@code dir} over a target of configuration {@code target} and weights {@code
   * weights}, on {@code kernels}.
   *
   * @throws ModelLoadException when a tensor is missing or misshapen, or {@code d2t} is not a map
   *     of the draft vocabulary into the target's
   * @throws IllegalArgumentException when the head does not fit the target
   */
  static CpuEagle3Head load(
      Path dir, ModelConfig target, ModelWeights<CpuTensor> weights, CpuKernelContext kernels) {
    Eagle3HeadConfig cfg = Eagle3HeadConfig.parse(dir);
    cfg.checkAgainst(target);
    HiddenCapture capture = cfg.captureFor(target.numLayers());
    WeightStore store = WeightStore.open(dir);
    Arena copies = Arena.ofShared();
    try {
      WeightReader r = new WeightReader(store, QuantizationConfig.NONE, copies, kernels);
      Eagle3Tensors names = Eagle3Tensors.resolve(store, cfg);
      Eagle3Tensors.Loaded<Linear, float[]> w =
          names.load(
              (name, rows, cols, bias) -> r.linear(name, rows, cols, bias),
              (name, n) -> r.vector(name, n));
      Linear head =
          names.hasLmHead()
              ? r.linear(names.lmHead(), cfg.draftVocabSize(), cfg.hiddenSize(), false)
              : CpuTensor.linear(weights.lmHead());
      int[] hot = names.hotTokenIds(store);
      return new CpuEagle3Head(
          cfg,
          store,
          copies,
          kernels,
          CpuTensor.linear(weights.embed()),
          w,
          head,
          hot,
          target.vocabSize(),
          capture);
    } catch (RuntimeException e) {
      copies.close();
      store.close();
      throw e;
    }
  }

  @Override
  public HiddenCapture capture() {
    return capture;
  }

  @Override
  public int targetWidth() {
    return 3 * cfg.hiddenSize();
  }

  @Override
  public int chainWidth() {
    return cfg.hiddenSize();
  }

  @Override
  public KvCache newCache() {
    int width = cfg.numKvHeads() * cfg.headDim();
    return new KvCache(1, width, width);
  }

  @Override
  public HiddenLogits forward(int[] tokens, float[] hidden, KvCache cache) {
    int n = rows(tokens, hidden, targetWidth());
    float[] h = new float[n * cfg.hiddenSize()];
    fc.apply(h, hidden, n);
    return layer(tokens, h, cache);
  }

  @Override
  public HiddenLogits chain(int[] tokens, float[] hidden, KvCache cache) {
    rows(tokens, hidden, chainWidth());
    return layer(tokens, hidden.clone(), cache);
  }

  private static int rows(int[] tokens, float[] hidden, int width) {
    int n = tokens.length;
    if (n == 0) {
      throw new IllegalArgumentException("an EAGLE-3 step needs at least one row");
    }
    if (hidden.length != n * width) {
      throw new IllegalArgumentException(
          "an EAGLE-3 step of "
              + n
              + " rows needs "
              + n * width
              + " hidden values, got "
              + hidden.length);
    }
    return n;
  }

  /** The decoder layer, norm and LM head over residual rows {@code h} (updated in place). */
  private HiddenLogits layer(int[] tokens, float[] h, KvCache cache) {
    int n = tokens.length;
    int d = cfg.hiddenSize();
    double eps = cfg.rmsNormEps();
    float[] x = new float[n * 2 * d];
    float[] e = new float[d];
    for (int t = 0; t < n; t++) {
      int id = tokens[t];
      if (id < 0 || id >= vocab) {
        throw new IllegalArgumentException(
            "token id " + id + " is outside the vocabulary (0.." + (vocab - 1) + ")");
      }
      CpuMatmul.loadRow(kernels, embed.weight(), id, e, 0);
      CpuOps.rmsNorm(e, 0, 1, d, d, inputNorm, eps);
      System.arraycopy(e, 0, x, t * 2 * d, d);
      System.arraycopy(h, t * d, x, t * 2 * d + d, d);
      CpuOps.rmsNorm(x, t * 2 * d + d, 1, d, d, hiddenNorm, eps);
    }
    float[] qs = new float[n * q.out()];
    float[] ks = new float[n * k.out()];
    float[] vs = new float[n * v.out()];
    q.apply(qs, x, n);
    Linear.applyBoth(k, ks, v, vs, x, n);
    int start = cache.length();
    float[] ctx =
        attention.forward(qs, ks, vs, BatchLayout.single(n, start), new KvCache[] {cache}, 0);
    cache.setLength(start + n);
    float[] a = new float[n * d];
    o.apply(a, ctx, n);
    CpuOps.addInPlace(h, a, n * d);
    float[] y = Arrays.copyOf(h, n * d);
    CpuOps.rmsNorm(y, 0, n, d, d, postNorm, eps);
    float[] m = new float[n * d];
    mlp.forward(m, y, n);
    CpuOps.addInPlace(h, m, n * d);
    float[] last = Arrays.copyOfRange(h, (n - 1) * d, n * d);
    CpuOps.rmsNorm(last, 0, 1, d, d, norm, eps);
    float[] draftLogits = new float[lmHead.out()];
    CpuMatmul.matmul(kernels, draftLogits, last, 1, lmHead.weight());
    float[] logits = new float[vocab];
    Arrays.fill(logits, Float.NEGATIVE_INFINITY);
    for (int i = 0; i < hotIds.length; i++) {
      logits[hotIds[i]] = draftLogits[i];
    }
    return new HiddenLogits(logits, h);
  }

  @Override
  public void close() {
    copies.close();
    store.close();
  }
}
