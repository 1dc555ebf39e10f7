package dev.ringmaster.model.arch;

import dev.ringmaster.backend.cpu.CpuMatmul;
import dev.ringmaster.backend.cpu.CpuMatrix;
import dev.ringmaster.backend.cpu.CpuOps;
import dev.ringmaster.backend.cpu.Numerics;
import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.model.config.ModelConfigParser;
import dev.ringmaster.model.weights.WeightStore;
import java.nio.file.Path;

/**
 * A causal language model on the CPU backend: embedding, decoder layers, final norm and LM head,
 * for every supported architecture. Weights stay memory-mapped in their disk format; compute is
 * f32.
 */
public final class CausalLm implements AutoCloseable {
  private final ModelConfig cfg;
  private final WeightStore store;
  private final CpuMatrix embed;
  private final DecoderLayer[] layers;
  private final float[] finalNorm;
  private final CpuMatrix lmHead;

  private CausalLm(
      ModelConfig cfg,
      WeightStore store,
      CpuMatrix embed,
      DecoderLayer[] layers,
      float[] finalNorm,
      CpuMatrix lmHead) {
    this.cfg = cfg;
    this.store = store;
    this.embed = embed;
    this.layers = layers;
    this.finalNorm = finalNorm;
    this.lmHead = lmHead;
  }

  /** Loads a model directory (config.json and safetensors weights). */
  public static CausalLm load(Path dir) {
    ModelConfig cfg = ModelConfigParser.parse(dir);
    WeightStore store = WeightStore.open(dir);
    try {
      WeightReader w = new WeightReader(store);
      int v = cfg.vocabSize();
      int h = cfg.hiddenSize();
      CpuMatrix embed = w.matrix("model.embed_tokens.weight", v, h);
      DecoderLayer[] layers = new ModelLoader(cfg, w).layers();
      float[] norm = w.vector("model.norm.weight", h);
      CpuMatrix head =
          cfg.tieWordEmbeddings() && !store.contains("lm_head.weight")
              ? embed
              : w.matrix("lm_head.weight", v, h);
      return new CausalLm(cfg, store, embed, layers, norm, head);
    } catch (RuntimeException e) {
      store.close();
      throw e;
    }
  }

  /** The model's configuration. */
  public ModelConfig config() {
    return cfg;
  }

  /** Bytes of weights in the checkpoint. */
  public long weightBytes() {
    return store.totalBytes();
  }

  /** A new, empty cache for one sequence. */
  public KvCache newCache() {
    return new KvCache(cfg);
  }

  /**
   * Runs the new tokens of a batch of sequences through the model, appending them to the caches,
   * and returns logits {@code [rows, vocab]} for the requested rows.
   *
   * @param tokens token ids, {@code layout.numTokens()} of them
   * @param layout sequence and position of each token
   * @param caches one cache per sequence; their lengths are advanced past the new tokens
   * @param logitRows indices of the tokens whose logits are wanted
   */
  public float[] forward(int[] tokens, BatchLayout layout, KvCache[] caches, int[] logitRows) {
    int n = tokens.length;
    int h = cfg.hiddenSize();
    for (int s = 0; s < layout.numSeqs(); s++) {
      int start = layout.seqStart()[s];
      int end = layout.seqStart()[s + 1];
      if (end > start && layout.positions()[start] != caches[s].length()) {
        throw new IllegalArgumentException(
            "sequence "
                + s
                + ": new tokens start at position "
                + layout.positions()[start]
                + " but its cache holds "
                + caches[s].length());
      }
    }
    float[] hidden = new float[n * h];
    for (int t = 0; t < n; t++) {
      int id = tokens[t];
      if (id < 0 || id >= cfg.vocabSize()) {
        throw new IllegalArgumentException(
            "token id " + id + " is outside the vocabulary (0.." + (cfg.vocabSize() - 1) + ")");
      }
      for (int d = 0; d < h; d++) {
        hidden[t * h + d] = Numerics.load(embed.data(), embed.dtype(), (long) id * h + d);
      }
    }
    for (DecoderLayer layer : layers) {
      layer.forward(hidden, h, layout, caches);
    }
    for (int s = 0; s < layout.numSeqs(); s++) {
      int end = layout.seqStart()[s + 1];
      if (end > layout.seqStart()[s]) {
        caches[s].setLength(layout.positions()[end - 1] + 1);
      }
    }
    int rows = logitRows.length;
    float[] sel = new float[rows * h];
    for (int r = 0; r < rows; r++) {
      System.arraycopy(hidden, logitRows[r] * h, sel, r * h, h);
    }
    CpuOps.rmsNorm(sel, 0, rows, h, h, finalNorm, cfg.rmsNormEps());
    float[] logits = new float[rows * cfg.vocabSize()];
    CpuMatmul.matmul(logits, sel, rows, lmHead);
    return logits;
  }

  /** Convenience: prefill or extend one sequence and return the logits of every new token. */
  public float[] forwardAll(int[] tokens, KvCache cache) {
    BatchLayout layout = BatchLayout.single(tokens.length, cache.length());
    int[] rows = new int[tokens.length];
    for (int i = 0; i < rows.length; i++) {
      rows[i] = i;
    }
    return forward(tokens, layout, new KvCache[] {cache}, rows);
  }

  @Override
  public void close() {
    store.close();
  }
}
