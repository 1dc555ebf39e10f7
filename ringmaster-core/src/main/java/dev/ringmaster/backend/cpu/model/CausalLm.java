package dev.ringmaster.backend.cpu.model;

import dev.ringmaster.backend.cpu.CpuKernelContext;
import dev.ringmaster.model.arch.DecoderModel;
import dev.ringmaster.model.arch.RankContext;
import dev.ringmaster.model.arch.ShardPlan;
import dev.ringmaster.model.config.IndexerCacheDtype;
import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.model.config.ModelConfigParser;
import dev.ringmaster.model.ops.ModelWeights;
import dev.ringmaster.model.weights.WeightStore;
import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.DraftHead;
import dev.ringmaster.runtime.HiddenCapture;
import dev.ringmaster.runtime.HiddenLogits;
import dev.ringmaster.runtime.KernelTuning;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.runtime.LanguageModel;
import dev.ringmaster.runtime.NextnLayer;
import dev.ringmaster.util.Progress;
import java.lang.foreign.Arena;
import java.nio.file.Path;
import java.util.Optional;

/**
 * A causal language model on the CPU backend, or one tensor-parallel rank of it: the model's {@link
 * DecoderModel} run over {@link CpuModelOps}. Weights stay memory-mapped in their disk format
 * (row-parallel shards are copied); compute is f32. A rank holds a contiguous slice of the
 * vocabulary for the embedding and the LM head (vocab-parallel). Its kernels run with the vector
 * width and thread pool of the {@link CpuKernelContext} it was loaded with; a context made from a
 * {@link KernelTuning} at load is the model's and closes with it.
 */
public final class CausalLm implements LanguageModel {
  private final ModelConfig cfg;
  private final WeightStore store;
  private final Arena shardCopies;
  private final DecoderModel model;
  private final ModelWeights<CpuTensor> weights;
  private final CpuModelOps.Blocks blocks;
  private final RankContext rank;
  private final CpuNextnLayer nextn;
  private final CpuKernelContext ownedKernels;

  private CausalLm(
      ModelConfig cfg,
      WeightStore store,
      Arena shardCopies,
      DecoderModel model,
      ModelWeights<CpuTensor> weights,
      RankContext rank,
      CpuNextnLayer nextn,
      CpuKernelContext kernels,
      CpuKernelContext ownedKernels) {
    this.cfg = cfg;
    this.store = store;
    this.shardCopies = shardCopies;
    this.model = model;
    this.weights = weights;
    this.rank = rank;
    this.blocks = new CpuModelOps.Blocks(cfg, rank, weights, kernels);
    this.nextn = nextn;
    this.ownedKernels = ownedKernels;
  }

  /**
   * Loads a model directory (config.json and safetensors weights) on one rank, on the {@linkplain
   * CpuKernelContext#shared() shared} kernel context.
   */
  public static CausalLm load(Path dir) {
    return load(dir, RankContext.single());
  }

  /**
   * Loads a model directory on one rank with the CPU kernel settings of {@code tuning} ({@code
   * cpu-vector-bits}, {@code cpu-threads}) and its indexer key cache format ({@code
   * indexer-cache-dtype}); a thread pool made for them closes with the model.
   */
  public static CausalLm load(Path dir, KernelTuning tuning) {
    CpuKernelContext kernels = CpuKernelContext.of(tuning);
    try {
      return load(dir, RankContext.single(), kernels, kernels, tuning.indexerCache());
    } catch (RuntimeException | Error e) {
      kernels.close();
      throw e;
    }
  }

  /** Loads this rank's shard of a model directory on the shared kernel context. */
  public static CausalLm load(Path dir, RankContext rank) {
    return load(dir, rank, CpuKernelContext.shared());
  }

  /**
   * Loads this rank's shard of a model directory, its kernels running on {@code kernels}, which the
   * caller keeps and closes after the model.
   */
  public static CausalLm load(Path dir, RankContext rank, CpuKernelContext kernels) {
    return load(dir, rank, kernels, IndexerCacheDtype.AUTO);
  }

  /**
   * {@link #load(Path, RankContext, CpuKernelContext)} with the indexer keys of a DeepSeek Sparse
   * Attention model cached as {@code indexerCache}.
   */
  public static CausalLm load(
      Path dir, RankContext rank, CpuKernelContext kernels, IndexerCacheDtype indexerCache) {
    return load(dir, rank, kernels, null, indexerCache);
  }

  private static CausalLm load(
      Path dir,
      RankContext rank,
      CpuKernelContext kernels,
      CpuKernelContext owned,
      IndexerCacheDtype indexerCache) {
    ModelConfig cfg = ModelConfigParser.parse(dir).withIndexerCache(indexerCache);
    ShardPlan.check(cfg, rank.parallel());
    WeightStore store = WeightStore.open(dir);
    Arena copies = Arena.ofShared();
    try {
      DecoderModel model = DecoderModel.of(cfg);
      CpuWeightSource src = new CpuWeightSource(store, cfg.quantization(), copies, kernels);
      ModelWeights<CpuTensor> weights;
      try (Progress p =
          rank.rank() == 0 ? Progress.start("loading layers", cfg.numLayers(), "layers") : null) {
        weights = model.load(src, rank, p);
      }
      // The first MTP layer, where the config declares one and the checkpoint holds it (configs
      // often keep num_nextn_predict_layers without the weights).
      CpuNextnLayer nextn =
          cfg.numNextnPredictLayers() > 0 && rank.size() == 1 && src.contains(model.mtpMarker(0))
              ? new CpuNextnLayer(cfg, model, weights, model.loadMtp(src, rank, 0), kernels)
              : null;
      return new CausalLm(cfg, store, copies, model, weights, rank, nextn, kernels, owned);
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
    return heapCache(null);
  }

  /** A heap cache whose positions take block ids from {@code blocks}, the scheduler's. */
  @Override
  public KvCache newCache(dev.ringmaster.runtime.KvBlockAllocator blocks) {
    return heapCache(java.util.Objects.requireNonNull(blocks));
  }

  /**
   * This rank's cache bytes per token: MLA keeps the whole latent and the whole indexer key cache
   * on every rank (the indexer is replicated), GQA only this rank's share of the KV heads.
   */
  @Override
  public long kvBytesPerToken() {
    if (cfg.architecture().usesMla()) {
      return KvCache.bytesPerToken(cfg);
    }
    return 4L * cfg.numLayers() * 2 * rank.share(cfg.numKvHeads()) * cfg.headDim();
  }

  private KvCache heapCache(dev.ringmaster.runtime.KvBlockAllocator blocks) {
    if (cfg.architecture().usesMla()) {
      return new KvCache(cfg, blocks); // the latent cache is replicated on every rank
    }
    // GQA: this rank caches only its share of the KV heads.
    int width = rank.share(cfg.numKvHeads()) * cfg.headDim();
    return new KvCache(cfg.numLayers(), width, width, blocks);
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
    return run(tokens, layout, caches, logitRows, HiddenCapture.FINAL).logits();
  }

  /** {@link #forward}, also returning the final-normed hidden state of every token. */
  @Override
  public HiddenLogits forwardHidden(
      int[] tokens, BatchLayout layout, KvCache[] caches, int[] logitRows) {
    CpuModelOps ops = run(tokens, layout, caches, logitRows, HiddenCapture.FINAL);
    return new HiddenLogits(ops.logits(), ops.normed());
  }

  /**
   * {@link #forward}, also returning the residual stream entering the layers {@code capture} lists.
   */
  @Override
  public HiddenLogits forwardHidden(
      int[] tokens, BatchLayout layout, KvCache[] caches, int[] logitRows, HiddenCapture capture) {
    if (capture.isFinal()) {
      return forwardHidden(tokens, layout, caches, logitRows);
    }
    CpuModelOps ops = run(tokens, layout, caches, logitRows, capture);
    return new HiddenLogits(ops.logits(), ops.captured(capture.layerInputs().size()));
  }

  /**
   * Loads an EAGLE-3 head over this model ({@link CpuEagle3Head}); single rank only.
   *
   * @throws UnsupportedOperationException on a tensor-parallel rank
   */
  @Override
  public DraftHead loadEagle3Head(Path dir) {
    if (rank.size() > 1) {
      throw new UnsupportedOperationException(
          "EAGLE-3 heads run on a single-rank model (tensor/expert parallel size 1)");
    }
    return CpuEagle3Head.load(dir, cfg, weights, blocks.kernels());
  }

  /**
   * The first MTP layer, when the config declares one, the checkpoint holds it ({@code
   * model.layers.<num_hidden_layers>.eh_proj.weight}) and the model runs on one rank. A DeepSeek
   * Sparse Attention model's MTP layer runs its own indexer.
   */
  @Override
  public Optional<NextnLayer> nextnLayer() {
    return Optional.ofNullable(nextn);
  }

  private CpuModelOps run(
      int[] tokens, BatchLayout layout, KvCache[] caches, int[] logitRows, HiddenCapture capture) {
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
    CpuModelOps ops = new CpuModelOps(blocks, tokens, layout, caches, logitRows);
    model.layers(ops, weights, capture);
    model.logits(ops, weights);
    for (int s = 0; s < layout.numSeqs(); s++) {
      int end = layout.seqStart()[s + 1];
      if (end > layout.seqStart()[s]) {
        caches[s].setLength(layout.positions()[end - 1] + 1);
      }
    }
    return ops;
  }

  @Override
  public void close() {
    shardCopies.close();
    store.close();
    if (ownedKernels != null) {
      ownedKernels.close();
    }
  }
}
