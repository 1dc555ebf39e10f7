package dev.ringmaster.model.arch;

import dev.ringmaster.backend.cpu.CpuMatmul;
import dev.ringmaster.backend.cpu.CpuMatrix;
import dev.ringmaster.backend.cpu.CpuOps;
import dev.ringmaster.backend.cpu.Numerics;
import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.model.config.ModelConfigParser;
import dev.ringmaster.model.weights.WeightStore;
import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.runtime.LanguageModel;
import java.lang.foreign.Arena;
import java.nio.file.Path;

/**
 * A causal language model on the CPU backend, or one tensor-parallel rank of it: embedding, decoder
 * layers, final norm and LM head, for every supported architecture. Weights stay memory-mapped in
 * their disk format (row-parallel shards are copied); compute is f32. A rank holds a contiguous
 * slice of the vocabulary for the embedding and the LM head (vocab-parallel).
 */
public final class CausalLm implements LanguageModel {
  private final ModelConfig cfg;
  private final WeightStore store;
  private final Arena shardCopies;
  private final CpuMatrix embed;
  private final DecoderLayer[] layers;
  private final float[] finalNorm;
  private final CpuMatrix lmHead;
  private final RankContext rank;

  private CausalLm(
      ModelConfig cfg,
      WeightStore store,
      Arena shardCopies,
      CpuMatrix embed,
      DecoderLayer[] layers,
      float[] finalNorm,
      CpuMatrix lmHead,
      RankContext rank) {
    this.cfg = cfg;
    this.store = store;
    this.shardCopies = shardCopies;
    this.embed = embed;
    this.layers = layers;
    this.finalNorm = finalNorm;
    this.lmHead = lmHead;
    this.rank = rank;
  }

  /** Loads a model directory (config.json and safetensors weights) on one rank. */
  public static CausalLm load(Path dir) {
    return load(dir, RankContext.single());
  }

  /** Loads this rank's shard of a model directory. */
  public static CausalLm load(Path dir, RankContext rank) {
    ModelConfig cfg = ModelConfigParser.parse(dir);
    ShardPlan.check(cfg, rank.parallel());
    WeightStore store = WeightStore.open(dir);
    Arena copies = Arena.ofShared();
    try {
      WeightReader w = new WeightReader(store, copies);
      int v = cfg.vocabSize();
      int h = cfg.hiddenSize();
      int v0 = rank.start(v);
      int vn = rank.share(v);
      CpuMatrix embed = w.matrixRows("model.embed_tokens.weight", v, h, v0, vn);
      DecoderLayer[] layers = new ModelLoader(cfg, w, rank).layers();
      float[] norm = w.vector("model.norm.weight", h);
      CpuMatrix head =
          cfg.tieWordEmbeddings() && !store.contains("lm_head.weight")
              ? embed
              : w.matrixRows("lm_head.weight", v, h, v0, vn);
      return new CausalLm(cfg, store, copies, embed, layers, norm, head, rank);
    } catch (RuntimeException e) {
      copies.close();
      store.close();
      throw e;
    }
  }

  @Override
  public ModelConfig config() {
    return cfg;
  }

  @Override
  public long weightBytes() {
    return store.totalBytes();
  }

  @Override
  public KvCache newCache() {
    if (cfg.architecture().usesMla()) {
      return new KvCache(cfg); // the latent cache is replicated on every rank
    }
    // GQA: this rank caches only its share of the KV heads.
    int width = rank.share(cfg.numKvHeads()) * cfg.headDim();
    return new KvCache(cfg.numLayers(), width, width);
  }

  /**
   * Runs the new tokens of a batch of sequences through the model, appending them to the caches,
   * and returns logits {@code [rows, vocab]} for the requested rows. On a tensor-parallel rank
   * every rank calls this together with the same arguments (and its own caches).
   *
   * @param tokens token ids, {@code layout.numTokens()} of them
   * @param layout sequence and position of each token
   * @param caches one cache per sequence; their lengths are advanced past the new tokens
   * @param logitRows indices of the tokens whose logits are wanted
   */
  @Override
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
    int v0 = rank.start(cfg.vocabSize());
    int vn = embed.rows();
    for (int t = 0; t < n; t++) {
      int id = tokens[t];
      if (id < 0 || id >= cfg.vocabSize()) {
        throw new IllegalArgumentException(
            "token id " + id + " is outside the vocabulary (0.." + (cfg.vocabSize() - 1) + ")");
      }
      // Vocab-parallel: the rank owning the row contributes it, the others zeros; then allreduce.
      if (id >= v0 && id < v0 + vn) {
        for (int d = 0; d < h; d++) {
          hidden[t * h + d] = Numerics.load(embed.data(), embed.dtype(), (long) (id - v0) * h + d);
        }
      }
    }
    rank.allReduce(hidden, n * h);
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
    int vocab = cfg.vocabSize();
    int vn2 = lmHead.rows();
    float[] local = new float[rows * vn2];
    CpuMatmul.matmul(local, sel, rows, lmHead);
    if (rank.size() == 1) {
      return local;
    }
    // Gather every rank's vocabulary slice, then lay the rows out as [rows, vocab].
    float[] gathered = new float[rank.size() * rows * vn2];
    rank.group().allGather(local, 0, rows * vn2, gathered);
    float[] logits = new float[rows * vocab];
    for (int r = 0; r < rank.size(); r++) {
      for (int i = 0; i < rows; i++) {
        System.arraycopy(gathered, (r * rows + i) * vn2, logits, i * vocab + r * vn2, vn2);
      }
    }
    return logits;
  }

  @Override
  public void close() {
    shardCopies.close();
    store.close();
  }
}
