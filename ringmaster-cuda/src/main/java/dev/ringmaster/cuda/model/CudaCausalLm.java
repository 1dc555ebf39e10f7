package dev.ringmaster.cuda.model;

import dev.ringmaster.backend.cpu.model.CausalLm;
import dev.ringmaster.cuda.CudaProbe;
import dev.ringmaster.cuda.CudaRuntime;
import dev.ringmaster.cuda.GpuThread;
import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.DeviceInfo;
import dev.ringmaster.cuda.kernels.MlaFusedDecode;
import dev.ringmaster.cuda.kernels.MlaKernels;
import dev.ringmaster.cuda.kernels.MlaPrefillAttention;
import dev.ringmaster.cuda.kernels.MoeKernels;
import dev.ringmaster.model.arch.RopeTable;
import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.model.config.ModelConfigParser;
import dev.ringmaster.model.weights.WeightStore;
import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.DraftHead;
import dev.ringmaster.runtime.HiddenCapture;
import dev.ringmaster.runtime.HiddenLogits;
import dev.ringmaster.runtime.KernelTuning;
import dev.ringmaster.runtime.KvBlockAllocator;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.runtime.LanguageModel;
import dev.ringmaster.runtime.NextnLayer;
import dev.ringmaster.runtime.StepProfileReporting;
import dev.ringmaster.runtime.sampling.SampledTokens;
import dev.ringmaster.runtime.sampling.SamplingBatch;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A DeepSeek-V2/V3 (MLA) model on one GPU: bf16 weights, a paged bf16 latent KV cache, chunked
 * batched prefill, and decode steps replayed from CUDA graphs. All device work runs on the GPU's
 * own thread; {@link #forward} may be called from any one thread at a time.
 *
 * <p>The paged cache's storage is indexed by the ids of one {@link KvBlockAllocator} at a time:
 * {@link #newCache()} takes them from the model's own allocator over the whole storage, {@link
 * #newCache(KvBlockAllocator)} from the scheduler's. Close the caches (or the model) to give the
 * blocks back.
 */
public final class CudaCausalLm implements LanguageModel, StepProfileReporting {
  /** Context length the decode split count is chosen for (graphs cannot see the real one). */
  private static final int DECODE_NOMINAL_CONTEXT = 2048;

  /**
   * Most new tokens of one sequence for which a step runs decode-shaped (every token a row of the
   * decode kernels, attending over the cache; a decode graph where one fits): a verify pass of up
   * to this many draft tokens plus one. Runs this short take the split kernels in a prefill chunk
   * too ({@link PrefillSegments#MIN_GEMM_TOKENS}), so the decode shape gives them the same
   * attention with fewer launches.
   */
  static final int FEW_TOKENS_PER_SEQ = PrefillSegments.MIN_GEMM_TOKENS - 1;

  /** Longest context the prefill GEMM path gathers (its scratch: 151 MB at D = 576). */
  private static final int PREFILL_GEMM_MAX_CONTEXT = 131_072;

  private final ModelConfig cfg;
  private final Path dir; // null on a tensor-parallel rank
  private final WeightStore store;
  private final GpuThread gpu;
  private final CudaModelOptions options;
  private final RankShard shard;
  private final boolean reportsProgress;
  private final boolean ownsThreadAndStore;
  private TensorParallelOps tp;
  private ExpertAllToAll allToAll;
  private StepCollectives collectives;
  private CudaStream stream;
  private GpuOps ops;
  private GpuWeights weights;
  private Activations act;
  private StepInputs inputs;
  private BlockPool pool;
  private GpuModelOps stack;
  private GpuGqaAttention gqa;
  private GpuSparseAttention dsa; // DeepSeek Sparse Attention models only
  private int cacheRowWidth;
  private DecodeGraphSets graphs = DecodeGraphSets.none();

  /** Most tokens of a short-context step that take the fused MLA launch (0 under parallelism). */
  private int mlaFusedTokens;

  private GroupedExperts grouped;
  private MlaPrefillAttention mlaPrefill;
  private PrefillSegments segments;
  private StepReadback readback;
  private MemoryPlan plan;
  private int sms;
  private final StepProfiles profiles = new StepProfiles();
  private CausalLm hostDrafts; // the checkpoint on the CPU, for drafters: loaded on first use

  private CudaCausalLm(
      ModelConfig cfg,
      Path dir,
      WeightStore store,
      GpuThread gpu,
      CudaModelOptions o,
      RankShard shard,
      boolean ownsThreadAndStore,
      boolean reportsProgress) {
    this.cfg = cfg;
    this.dir = dir;
    this.store = store;
    this.gpu = gpu;
    this.options = o;
    this.shard = shard;
    this.ownsThreadAndStore = ownsThreadAndStore;
    this.reportsProgress = reportsProgress;
  }

  /**
   * One rank of a tensor-parallel model on {@code gpu} (owned by the caller, as is {@code store}).
   * Nothing is on the device until {@link #setUpRank} runs, on every rank at once (the warm-up
   * steps before graph capture issue collectives). {@code reportsProgress}: this rank shows the
   * upload and capture progress for this node's ranks, which keep the same pace.
   */
  static CudaCausalLm rank(
      ModelConfig cfg,
      WeightStore store,
      GpuThread gpu,
      CudaModelOptions o,
      RankShard shard,
      boolean reportsProgress) {
    return new CudaCausalLm(cfg, null, store, gpu, o, shard, false, reportsProgress);
  }

  /** Uploads this rank's weights, plans its memory and captures its graphs (GPU thread). */
  void setUpRank() {
    setUp();
  }

  /** The collectives this rank issues per step (null for the plain single-GPU model). */
  StepCollectives collectives() {
    return collectives;
  }

  /**
   * Loads a model directory onto the GPU. Fails at once with the probe's message when no usable GPU
   * is there, and with a clear message for architectures the GPU path does not run yet.
   */
  public static CudaCausalLm load(Path dir, CudaModelOptions options) {
    CudaProbe probe = CudaRuntime.probe();
    if (!probe.available()) {
      throw new IllegalStateException("--device cuda: " + probe.reason());
    }
    if (options.device() >= probe.devices().size()) {
      throw new IllegalStateException(
          "GPU " + options.device() + " does not exist (" + probe.devices().size() + " found)");
    }
    ModelConfig cfg = ModelConfigParser.parse(dir);
    GpuModelSupport.check(cfg);
    WeightStore store = WeightStore.open(dir);
    GpuThread gpu = GpuThread.start(options.device());
    CudaCausalLm lm =
        new CudaCausalLm(cfg, dir, store, gpu, options, RankShard.single(), true, true);
    try {
      gpu.run(lm::setUp);
    } catch (RuntimeException | Error e) {
      lm.close();
      throw e;
    }
    System.err.print(lm.plan.describe());
    if (options.pdl()) {
      System.err.println("programmatic dependent launch: on");
    }
    return lm;
  }

  private void setUp() {
    DeviceInfo dev = gpu.device();
    sms = dev.multiprocessors();
    stream = CudaStream.create();
    weights = GpuWeights.upload(cfg, store, stream, shard, reportsProgress);
    long total = CudaDriverAccess.memoryInfo()[1];
    List<Integer> sizes = MemoryPlan.graphSizes(options, total);
    int maxBs = sizes.isEmpty() ? 0 : sizes.get(sizes.size() - 1);
    int logitRows = Math.max(maxBs, 64);
    int maxTokens = Math.max(options.chunkedPrefillSize(), logitRows);
    int maxInputs =
        Math.max(
            Math.max(cfg.hiddenSize(), cfg.intermediateSize()),
            Math.max(
                Math.max(cfg.qLoraRank(), cfg.numHeads() * cfg.vHeadDim()),
                cfg.moe() == null ? 0 : cfg.moe().sharedIntermediateSize()));
    KernelTuning tuning = options.tuning();
    ops =
        new GpuOps(
            stream,
            maxTokens,
            maxInputs,
            options.gemvMaxTokens(),
            tuning,
            weights.dequantMaxElements);
    // The fused MLA launch is not checked under tensor parallelism: separate kernels there.
    boolean usesMla = cfg.architecture().usesMla();
    boolean sparseAttention = cfg.architecture().usesSparseAttention();
    // Sparse attention models capture their second graph set with sparse attention instead.
    mlaFusedTokens =
        shard.parallel()
                || sparseAttention
                || !usesMla
                || !MlaFusedDecode.supports(
                    cfg.qkNopeHeadDim(), cfg.qkRopeHeadDim(), cfg.vHeadDim(), cfg.kvLoraRank())
            ? 0
            : tuning.mlaFusedTokens();
    act = new Activations(cfg, maxTokens, logitRows, shard);
    readback = new StepReadback(cfg.vocabSize(), act, stream, ops.kernels.deviceSampler());
    RopeTable rope = new RopeTable(cfg.rope(), cfg.ropeDim());
    act.invFreq.upload(stream, rope.inverseFrequencies());
    // Expert parallelism runs long prefills through the fused expert kernels too: the grouped
    // GEMM path assumes every routed pair of the step is computed here.
    if (cfg.moe() != null
        && groupedMinTokens() <= maxTokens
        && !shard.expertParallel()
        && !shard.allToAll()) {
      grouped =
          new GroupedExperts(
              maxTokens,
              cfg.moe().numExperts(),
              cfg.moe().topK(),
              cfg.hiddenSize(),
              shard.expertInter(cfg.moe().expertIntermediateSize()),
              options.profile());
    }

    if (usesMla
        && tuning.mlaPrefillGemm()
        && maxTokens >= PrefillSegments.MIN_GEMM_TOKENS
        && (cfg.kvLoraRank() + cfg.qkRopeHeadDim()) % 8 == 0) {
      mlaPrefill =
          new MlaPrefillAttention(
              localHeads(),
              cfg.qkNopeHeadDim(),
              cfg.kvLoraRank(),
              cfg.qkRopeHeadDim(),
              cfg.vHeadDim(),
              Math.min(cfg.maxPositionEmbeddings(), PREFILL_GEMM_MAX_CONTEXT),
              maxTokens,
              MlaPrefillAttention.DEFAULT_SCORE_BUDGET,
              tuning.mlaExpandedPrefill() ? MlaPrefillAttention.DEFAULT_EXPANDED_BYTES : 0);
      segments = new PrefillSegments(maxTokens);
    }
    if (shard.parallel()) {
      // The collectives' buffers (the all-to-all's grow with step tokens x top-k x hidden: ~2.5 GB
      // for a GLM-5 shape) come before the KV cache is sized from what is free, not after it.
      allocateParallelBuffers(logitRows);
    }
    // KV cache: the static share minus the weights, bounded by what is free now less graphs.
    double fraction =
        options.memFractionStatic() != null
            ? options.memFractionStatic()
            : MemoryPlan.defaultMemFractionStatic(
                total, options.chunkedPrefillSize(), Math.max(maxBs, 1));
    if (!usesMla) {
      gqa = new GpuGqaAttention(cfg, rope, localHeads(), shard.share(cfg.numKvHeads()), maxTokens);
    }
    int blockSize = options.blockSize();
    if (sparseAttention) {
      // Before the KV cache is sized: the score scratch grows with the longest context.
      long maxPositions = (cfg.maxPositionEmbeddings() + blockSize - 1L) / blockSize * blockSize;
      dsa = new GpuSparseAttention(cfg, rope, maxTokens, Math.max(maxBs, 32), maxPositions, sms);
      // Settles the score kernel (and its shared-memory opt-in) before any graph is captured.
      ops.kernels
          .dsa()
          .indexerUsesTensorCores(
              cfg.sparseAttention().indexHeads(), cfg.sparseAttention().indexHeadDim());
    }
    int rowWidth =
        usesMla
            ? cfg.kvLoraRank() + cfg.qkRopeHeadDim()
            : GpuGqaAttention.cacheRowWidth(cfg, shard.share(cfg.numKvHeads()));
    cacheRowWidth = rowWidth;
    int tableRows = Math.max(logitRows, 1024);
    long bytesPerBlock =
        BlockPool.bytes(cfg.numLayers(), 1, blockSize, rowWidth)
            + blockSize * BlockPool.indexerBytesPerToken(cfg);
    long graphReserve =
        MemoryPlan.graphReserve(
            sparseAttention
                ? 2L * sizes.size()
                : sizes.size() + sizes.stream().filter(b -> b <= mlaFusedTokens).count());
    long blocks =
        MemoryPlan.kvBlocks(
            total,
            fraction,
            weights.bytes,
            CudaDriverAccess.memoryInfo()[0],
            graphReserve,
            bytesPerBlock,
            blockSize,
            options.maxTotalTokens());
    // The block table is a fixed [rows, width] buffer; its width bounds one sequence's length.
    long maxContext = Math.min(cfg.maxPositionEmbeddings(), (blocks - 1) * blockSize);
    int maxBlocksPerSeq = (int) ((maxContext + blockSize - 1) / blockSize);
    blocks = Math.min(blocks, Integer.MAX_VALUE - 1);
    pool =
        new BlockPool(
            cfg.numLayers(),
            (int) blocks,
            blockSize,
            rowWidth,
            BlockPool.indexedLayers(cfg),
            sparseAttention ? cfg.sparseAttention().indexHeadDim() : 0,
            stream);
    inputs = new StepInputs(maxTokens, tableRows, maxBlocksPerSeq);
    inputs.zero(stream);
    stack = shard.parallel() ? parallelStack(rope) : singleStack(rope);
    stream.synchronize();
    if (shard.parallel() && !sizes.isEmpty()) {
      // The warm-up before each capture is the first collective: ranks that finished uploading
      // early wait here (the peer kernels' barrier would give up after 30 s).
      shard.comm().barrier();
    }
    List<Integer> longContextSizes =
        sparseAttention ? sizes : sizes.stream().filter(b -> b <= mlaFusedTokens).toList();
    graphs =
        DecodeGraphSets.capture(
            sizes,
            longContextSizes,
            stream,
            bs -> {
              stack.useSparseAttention(false, 0, null);
              if (collectives != null) {
                collectives.recordGraph(
                    bs, () -> stack.decodeStep(bs, decodeSplits(bs), mlaFusedTokens));
              } else {
                stack.decodeStep(bs, decodeSplits(bs), mlaFusedTokens);
              }
            },
            bs -> {
              stack.useSparseAttention(sparseAttention, 0, null);
              stack.decodeStep(bs, decodeSplits(bs), 0);
            },
            reportsProgress);
    Map<Integer, Long> perSize = graphs.bytesPerSize();
    long graphBytes = graphs.bytes();
    long activationBytes =
        act.bytes()
            + ops.scratchBytes()
            + inputs.bytes()
            + (grouped == null ? 0 : grouped.bytes())
            + (mlaPrefill == null ? 0 : mlaPrefill.bytes() + segments.bytes())
            + (tp == null ? 0 : tp.bytes())
            + (gqa == null ? 0 : gqa.bytes())
            + (dsa == null ? 0 : dsa.bytes())
            + (allToAll == null ? 0 : allToAll.bytes());
    plan =
        new MemoryPlan(
            dev.toString(),
            total,
            fraction,
            weights.bytes,
            activationBytes,
            graphBytes,
            perSize,
            pool.bytes(),
            pool.indexerBytes(),
            pool.capacityTokens(),
            blockSize,
            CudaDriverAccess.memoryInfo()[0]);
  }

  /**
   * Longest context a step may have and still attend densely: {@code index_topk} for sparse
   * attention models (dense and sparse attention are equal there; no limit under the kernel option
   * {@code dsa-sparse-attention=false}), else the fused MLA launch's limit.
   */
  private int denseContextLimit() {
    if (dsa == null) {
      return options.tuning().mlaFusedMaxContext();
    }
    return options.tuning().dsaSparseAttention() ? dsa.topK() : Integer.MAX_VALUE;
  }

  /**
   * Fewest chunk tokens for the per-expert GEMMs (the {@code moe-grouped-min-tokens} kernel option
   * overrides the automatic choice, to compare with the tensor-core expert kernels).
   */
  private int groupedMinTokens() {
    int forced = options.tuning().moeGroupedMinTokens();
    if (forced > 0) {
      return forced;
    }
    // Where the tensor-core expert kernels run, they beat the per-expert cuBLAS GEMMs at every
    // chunk size measured (4,096-token prompt on one H200: 14.4k vs 7.9k tok/s): each cuBLAS call
    // has a new row count, and its host-side setup (~175 us a call) starves the GPU.
    if (cfg.moe() != null
        && MoeKernels.moeMmaSupports(
            cfg.hiddenSize(), shard.expertInter(cfg.moe().expertIntermediateSize()))) {
      return Integer.MAX_VALUE;
    }
    return options.moeGroupedMinTokens();
  }

  private GpuModelOps singleStack(RopeTable rope) {
    return new GpuModelOps(
        cfg,
        weights.model,
        ops,
        act,
        inputs,
        pool,
        cfg.architecture().usesMla() ? new GpuMlaAttention(cfg, rope) : null,
        gqa,
        new GpuMoe(cfg, grouped),
        null,
        dsa);
  }

  /** The tensor-parallel ops' and the expert all-to-all's device buffers. */
  private void allocateParallelBuffers(int logitRows) {
    tp = new TensorParallelOps(cfg, shard, stream, logitRows);
    tp.kernels().setProgrammaticDependentLaunch(options.pdl());
    collectives = new StepCollectives(shard.comm().stats());
    if (cfg.moe() != null && shard.allToAll()) {
      allToAll = new ExpertAllToAll(cfg, shard, stream, tp.kernels(), act.maxTokens);
      allToAll.connect(act.maxTokens, act.moe.pairRowsPtr());
    }
  }

  /** This rank's heads and experts, with the collectives between the blocks. */
  private GpuModelOps parallelStack(RopeTable rope) {
    int topK = cfg.moe() == null ? 0 : cfg.moe().topK();
    GpuMoe mlp =
        new GpuMoe(
            cfg,
            grouped,
            cfg.moe() == null ? 0 : shard.expertInter(cfg.moe().expertIntermediateSize()),
            allToAll != null
                ? null
                : n ->
                    tp.localizeExperts(
                        act.expertIds.ptr(), act.moe.pairRowsPtr(), n, topK, cfg.hiddenSize()),
            allToAll);
    return new GpuModelOps(
        cfg,
        weights.model,
        ops,
        act,
        inputs,
        pool,
        cfg.architecture().usesMla() ? new GpuMlaAttention(cfg, rope, localHeads()) : null,
        gqa,
        mlp,
        tp,
        null);
  }

  /** Attention heads on this rank. */
  private int localHeads() {
    return shard.share(cfg.numHeads());
  }

  /** Whether this model's kernels launch as programmatic dependent launches ({@code pdl}). */
  boolean programmaticDependentLaunch() {
    return ops.kernels.programmaticDependentLaunch();
  }

  /** Whether decode sizes were captured a second time for long contexts (without fused MLA). */
  boolean capturedLongContextGraphs() {
    return graphs.hasLongContext();
  }

  /** Where the GPU's memory went (weights, activations, graphs, KV cache). */
  public MemoryPlan memoryPlan() {
    return plan;
  }

  @Override
  public java.util.OptionalLong kvCapacityTokens() {
    return java.util.OptionalLong.of(plan.kvTokens());
  }

  /** The GPU cache's block size: one scheduler page is one block. */
  @Override
  public java.util.OptionalInt kvPageSize() {
    return java.util.OptionalInt.of(pool.blockSize());
  }

  /** The decode sizes captured as graphs (empty with {@code --disable-cuda-graph}). */
  @Override
  public List<Integer> decodeGraphBatchSizes() {
    return graphs.sizes();
  }

  /**
   * The paged cache's bf16 rows (MLA: the latent and rotary key; GQA: this rank's keys and values).
   */
  @Override
  public long kvBytesPerToken() {
    return BlockPool.bytes(cfg.numLayers(), 1, 1, cacheRowWidth)
        + BlockPool.indexerBytesPerToken(cfg);
  }

  @Override
  public ModelConfig config() {
    return cfg;
  }

  /**
   * Blocks of the paged KV cache no sequence or prefix-cache page of the allocator in use holds
   * (tests).
   */
  int freeKvBlocks() {
    return pool.freeBlocks();
  }

  @Override
  public long weightBytes() {
    return store.totalBytes();
  }

  @Override
  public KvCache newCache() {
    return newCache(pool.own());
  }

  @Override
  public KvCache newCache(KvBlockAllocator blocks) {
    pool.bind(blocks);
    var table = blocks.newTable();
    return KvCache.ofExternal(new GpuKvCache(pool, table), table);
  }

  /** The model's own allocator over the whole storage. */
  KvBlockAllocator ownBlocks() {
    return pool.own();
  }

  /**
   * A storage view of this rank for a tensor-parallel cache whose block table (shared by every
   * rank, owned by the sharded cache) comes from {@code blocks}.
   */
  KvCache shardView(KvBlockAllocator blocks, dev.ringmaster.runtime.KvBlockTable table) {
    pool.bind(blocks);
    return KvCache.ofExternal(new GpuKvCache(pool, table));
  }

  @Override
  public float[] forward(int[] tokens, BatchLayout layout, KvCache[] caches, int[] logitRows) {
    return (float[]) run(tokens, layout, caches, logitRows, false, null, null);
  }

  @Override
  public int[] forwardGreedy(int[] tokens, BatchLayout layout, KvCache[] caches, int[] logitRows) {
    return (int[]) run(tokens, layout, caches, logitRows, true, null, null);
  }

  /** {@link #forward}, also returning every token's final-normed hidden state (copied back). */
  @Override
  public HiddenLogits forwardHidden(
      int[] tokens, BatchLayout layout, KvCache[] caches, int[] logitRows) {
    return forwardHidden(tokens, layout, caches, logitRows, HiddenCapture.FINAL);
  }

  /**
   * {@link #forward}, also returning the hidden states {@code capture} names, copied from the GPU's
   * activation buffers as the forward passes them. A final-state step may replay its decode graph
   * (the final-normed rows stay in their buffer); a step that captures layer inputs runs eagerly.
   *
   * @throws UnsupportedOperationException on a tensor-parallel rank
   */
  @Override
  public HiddenLogits forwardHidden(
      int[] tokens, BatchLayout layout, KvCache[] caches, int[] logitRows, HiddenCapture capture) {
    if (shard.parallel()) {
      throw new UnsupportedOperationException(
          "hidden states are exposed by the single-GPU model only (tensor/expert parallel size 1)");
    }
    capture.check(cfg.numLayers());
    StepHiddenStates states = new StepHiddenStates(capture, cfg.hiddenSize(), tokens.length);
    float[] logits = (float[]) run(tokens, layout, caches, logitRows, false, null, states);
    return new HiddenLogits(logits, states.values());
  }

  /**
   * An EAGLE-3 head on the CPU over this checkpoint's embedding (memory-mapped, pages read on use),
   * fed the hidden states this GPU's forwards copy back ({@link #forwardHidden}).
   *
   * @throws UnsupportedOperationException on a tensor-parallel rank
   */
  @Override
  public DraftHead loadEagle3Head(Path headDir) {
    return hostDrafts().loadEagle3Head(headDir);
  }

  /**
   * The checkpoint's first MTP layer on the CPU (with the embedding and LM head, memory-mapped),
   * fed the final hidden states this GPU's forwards copy back; empty where the config declares none
   * or the checkpoint does not hold it.
   */
  @Override
  public Optional<NextnLayer> nextnLayer() {
    return cfg.numNextnPredictLayers() == 0 ? Optional.empty() : hostDrafts().nextnLayer();
  }

  /** The checkpoint opened on the CPU for the drafters, once. */
  private synchronized CausalLm hostDrafts() {
    if (dir == null || shard.parallel()) {
      throw new UnsupportedOperationException(
          "drafters over hidden states run on the single-GPU model (tensor/expert parallel size 1)");
    }
    if (hostDrafts == null) {
      hostDrafts = CausalLm.load(dir, options.tuning());
    }
    return hostDrafts;
  }

  /**
   * Steps sample on the device after the step's graph replay (decode) or LM head (prefill chunks),
   * so only token ids (and the logprobs asked for) come back; batches past the sampling buffers'
   * capacities copy their logits rows back and sample on the host.
   */
  @Override
  public SampledTokens forwardSample(
      int[] tokens, BatchLayout layout, KvCache[] caches, int[] logitRows, SamplingBatch sampling) {
    sampling.checkRows(logitRows.length);
    return (SampledTokens) run(tokens, layout, caches, logitRows, false, sampling, null);
  }

  /**
   * One step on the GPU thread: decode-shaped when every sequence brings 1 to {@link
   * #FEW_TOKENS_PER_SEQ} tokens and all fit the logits buffer (decode steps, verify passes, and
   * steps mixing them), else as prefill chunks. {@code hidden} (or null) receives the hidden states
   * a drafter reads.
   */
  private Object run(
      int[] tokens,
      BatchLayout layout,
      KvCache[] caches,
      int[] rows,
      boolean greedy,
      SamplingBatch sampling,
      StepHiddenStates hidden) {
    int n = tokens.length;
    int numSeqs = layout.numSeqs();
    if (layout.numTokens() != n || caches.length != numSeqs) {
      throw new IllegalArgumentException("tokens, layout and caches disagree in size");
    }
    if (numSeqs > inputs.tableRows) {
      throw new IllegalArgumentException(
          numSeqs + " sequences in one step exceed the GPU block table's " + inputs.tableRows);
    }
    GpuKvCache[] seqCaches = new GpuKvCache[numSeqs];
    boolean fewTokens = n <= act.logitRows;
    int mostPerSeq = 0;
    for (int s = 0; s < numSeqs; s++) {
      int start = layout.seqStart()[s];
      int end = layout.seqStart()[s + 1];
      fewTokens &= end > start && end - start <= FEW_TOKENS_PER_SEQ;
      mostPerSeq = Math.max(mostPerSeq, end - start);
      // A sparse-attention step of several tokens of one sequence runs as a prefill chunk, whose
      // indexer runs are planned per sequence.
      fewTokens &= dsa == null || end - start == 1;
      if (!(caches[s].external() instanceof GpuKvCache g) || g.pool() != pool) {
        throw new IllegalArgumentException("sequence " + s + ": cache is not from this GPU model");
      }
      seqCaches[s] = g;
      if (end > start) {
        int first = layout.positions()[start];
        if (first != caches[s].length()) {
          throw new IllegalArgumentException(
              "sequence "
                  + s
                  + ": new tokens start at position "
                  + first
                  + " but its cache holds "
                  + caches[s].length());
        }
        int last = layout.positions()[end - 1];
        if (last >= inputs.maxBlocksPerSeq * pool.blockSize()) {
          throw new IllegalArgumentException(
              "sequence " + s + " would reach " + (last + 1) + " tokens, past the GPU's limit");
        }
        caches[s].ensureCapacity(last + 1);
      }
    }
    for (int id : tokens) {
      if (id < 0 || id >= cfg.vocabSize()) {
        throw new IllegalArgumentException(
            "token id " + id + " is outside the vocabulary (0.." + (cfg.vocabSize() - 1) + ")");
      }
    }
    for (int r : rows) {
      if (r < 0 || r >= n) {
        throw new IllegalArgumentException("logit row " + r + " outside 0.." + (n - 1));
      }
    }
    boolean decodeShaped = fewTokens;
    boolean oneEach = mostPerSeq == 1;
    Object out =
        gpu.call(
            () -> {
              stack.captureHiddenInto(hidden == null || hidden.capture().isFinal() ? null : hidden);
              try {
                return decodeShaped
                    ? decodeOnGpu(
                        tokens, layout, seqCaches, rows, greedy, sampling, oneEach, hidden)
                    : prefillOnGpu(tokens, layout, seqCaches, rows, greedy, sampling, hidden);
              } finally {
                stack.captureHiddenInto(null);
              }
            });
    for (int s = 0; s < numSeqs; s++) {
      int end = layout.seqStart()[s + 1];
      if (end > layout.seqStart()[s]) {
        caches[s].setLength(layout.positions()[end - 1] + 1);
      }
    }
    return out;
  }

  /** Splits of the KV length per decode query (the same with and without graphs). */
  private int decodeSplits(int bs) {
    if (gqa != null) {
      return gqa.splits(bs, DECODE_NOMINAL_CONTEXT, sms);
    }
    return MlaKernels.mlaSplits(
        bs, localHeads(), DECODE_NOMINAL_CONTEXT, sms, act.mla.splitLimit(bs));
  }

  /** The step's logits sampled on the host when {@code sampling} is given, else as they are. */
  private Object sampleOnHost(Object logits, SamplingBatch sampling) {
    return sampling == null ? logits : sampling.sampleOnCpu((float[]) logits, cfg.vocabSize());
  }

  /**
   * A decode-shaped step: every token one row of the decode kernels (its sequence's block table
   * row, its own position and slot), replayed from the decode graph of the smallest captured size
   * that holds the step's tokens, or eager past the largest. Several tokens of one sequence (a
   * verify pass) are appended to the cache before any row attends, and each attends causally up to
   * its own position; the fused MLA launch, which appends a row only for the token that reads it,
   * is left out of such steps. A step that captures layer inputs runs eagerly.
   */
  private Object decodeOnGpu(
      int[] tokens,
      BatchLayout layout,
      GpuKvCache[] caches,
      int[] rows,
      boolean greedy,
      SamplingBatch sampling,
      boolean oneEach,
      StepHiddenStates hidden) {
    int n = tokens.length;
    boolean eager = hidden != null && !hidden.capture().isFinal();
    int bucket = eager ? -1 : graphs.bucketFor(n);
    int padded = bucket > 0 ? bucket : n;
    int[] ids = new int[padded];
    int[] pos = new int[padded];
    int[] seq = new int[padded];
    int[] slots = new int[padded];
    int width = inputs.maxBlocksPerSeq;
    // Rows past the step's sequences stay all padding block, for the padding tokens below.
    int[] table = new int[padded * width];
    int maxLen = 0;
    for (int s = 0; s < layout.numSeqs(); s++) {
      caches[s].writeTable(table, s * width, width);
      for (int t = layout.seqStart()[s]; t < layout.seqStart()[s + 1]; t++) {
        int p = layout.positions()[t];
        ids[t] = tokens[t];
        pos[t] = p;
        seq[t] = s;
        slots[t] = caches[s].block(p) * pool.blockSize() + p % pool.blockSize();
        maxLen = Math.max(maxLen, p + 1);
      }
    }
    // Padding rows: token 0 at position 0 of table row t (t >= n >= sequences: padding block).
    for (int t = n; t < padded; t++) {
      seq[t] = t;
    }
    inputs.upload(stream, padded, ids, pos, seq, slots, table, padded);
    boolean longContext = maxLen > denseContextLimit();
    boolean unfused = longContext || !oneEach;
    stack.useSparseAttention(dsa != null && longContext, 0, null);
    if (hidden != null) {
      hidden.chunk(0, n);
    }
    if (oneEach && options.profile() && profiles.first(-padded)) {
      profileDecode(padded, longContext ? 0 : mlaFusedTokens, longContext);
    }
    if (bucket > 0) {
      // Sparse-attention models keep their second set for long contexts; the others' second set
      // (sizes up to the fused limit, captured unfused) serves long contexts and verify passes.
      graphs.replay(bucket, dsa != null ? longContext : unfused, stream);
      if (collectives != null) {
        collectives.replayed(bucket);
      }
    } else {
      stack.decodeStep(padded, decodeSplits(padded), unfused ? 0 : mlaFusedTokens);
    }
    if (hidden != null) {
      hidden.finalRows(act.normed, stream);
    }
    if (sampling != null) {
      return readback.samplesOnDevice(rows, sampling)
          ? readback.sample(sampling)
          : sampleOnHost(readback.collect(rows, 0, false, rows.length), sampling);
    }
    return readback.collect(rows, 0, greedy, rows.length);
  }

  /** Profiles an eager decode step of {@code bs} rows, then times it as it really runs. */
  private void profileDecode(int bs, int fusedTokens, boolean longContext) {
    int bucket = graphs.bucketFor(bs);
    profiles.profileDecode(
        stack,
        stream,
        bs,
        decodeSplits(bs),
        fusedTokens,
        bucket == bs,
        () -> {
          if (bucket == bs) {
            graphs.replay(bs, longContext, stream);
          } else {
            stack.decodeStep(bs, decodeSplits(bs), fusedTokens);
          }
        });
  }

  /**
   * Prefill chunks (and mixed steps): the requested rows' logits computed in groups that fit the
   * logits buffer, each group's rows sampled on the device when {@code sampling} is given (on the
   * host where the group exceeds the sampling buffers).
   */
  private Object prefillOnGpu(
      int[] tokens,
      BatchLayout layout,
      GpuKvCache[] caches,
      int[] rows,
      boolean greedy,
      SamplingBatch sampling,
      StepHiddenStates hidden) {
    int n = tokens.length;
    int numSeqs = layout.numSeqs();
    int vocab = cfg.vocabSize();
    int h = cfg.hiddenSize();
    int width = inputs.maxBlocksPerSeq;
    int[] table = new int[numSeqs * width];
    int[] seqOf = new int[n];
    for (int s = 0; s < numSeqs; s++) {
      caches[s].writeTable(table, s * width, width);
      for (int i = layout.seqStart()[s]; i < layout.seqStart()[s + 1]; i++) {
        seqOf[i] = s;
      }
    }
    float[] logits = greedy || sampling != null ? null : new float[rows.length * vocab];
    int[] chosen = greedy ? new int[rows.length] : null;
    SampledTokens sampled = sampling == null ? null : SampledTokens.forBatch(sampling);
    int chunk = inputs.maxTokens;
    for (int c0 = 0; c0 < n; c0 += chunk) {
      int len = Math.min(chunk, n - c0);
      int[] ids = new int[len];
      int[] pos = new int[len];
      int[] seq = new int[len];
      int[] slots = new int[len];
      int maxLen = 0;
      boolean oneEach = true;
      for (int i = 0; i < len; i++) {
        int t = c0 + i;
        int p = layout.positions()[t];
        ids[i] = tokens[t];
        pos[i] = p;
        seq[i] = seqOf[t];
        slots[i] = caches[seqOf[t]].block(p) * pool.blockSize() + p % pool.blockSize();
        maxLen = Math.max(maxLen, p + 1);
        oneEach &= i == 0 || seq[i] != seq[i - 1];
      }
      inputs.upload(stream, len, ids, pos, seq, slots, c0 == 0 ? table : null, numSeqs);
      int splits =
          gqa != null
              ? gqa.splits(len, maxLen, sms)
              : MlaKernels.mlaSplits(len, localHeads(), maxLen, sms, act.mla.splitLimit(len));
      // The fused MLA launch appends only the row of the token that reads it: one token a sequence.
      int fusedTokens = maxLen > denseContextLimit() || !oneEach ? 0 : mlaFusedTokens;
      boolean sparse = dsa != null && maxLen > denseContextLimit();
      stack.useSparseAttention(
          sparse, maxLen, sparse ? GpuSparseAttention.runs(seq, pos, len) : null);
      boolean groupedExperts = len >= groupedMinTokens();
      if (hidden != null) {
        hidden.chunk(c0, len);
      }
      if (segments != null) {
        segments.plan(
            len, seq, pos, mlaPrefill.maxContext(), mlaPrefill.expandedMaxContext(), stream);
        stack.usePrefillSegments(segments, mlaPrefill);
      }
      try {
        if (options.profile() && c0 == 0 && profiles.first(len)) {
          // An unprofiled pass first, so the profile shows warm launches (cuBLAS picks and loads
          // its kernels on a shape's first call). Running the chunk twice is idempotent: the
          // second pass appends the same cache rows and computes the same outputs.
          stack.forward(len, splits, groupedExperts, fusedTokens);
          stack.beginProfile();
          stack.forward(len, splits, groupedExperts, fusedTokens);
          java.util.Map<String, Double> groups = stack.endProfile();
          String what = "prefill chunk of " + len + " tokens";
          profiles.put(what, groups);
          System.err.println(StepProfiler.format(what, groups));
        } else {
          stack.forward(len, splits, groupedExperts, fusedTokens);
        }
      } finally {
        stack.usePrefillSegments(null, null);
      }
      if (hidden != null) {
        hidden.finalRows(act.normed, stream);
      }
      // The requested rows of this chunk, in groups that fit the logits buffer.
      List<Integer> wanted = new ArrayList<>();
      for (int r = 0; r < rows.length; r++) {
        if (rows[r] >= c0 && rows[r] < c0 + len) {
          wanted.add(r);
        }
      }
      for (int g0 = 0; g0 < wanted.size(); g0 += act.logitRows) {
        int count = Math.min(act.logitRows, wanted.size() - g0);
        int[] local = new int[count];
        for (int i = 0; i < count; i++) {
          int row = rows[wanted.get(g0 + i)] - c0;
          CudaDriverAccess.copyOnDevice(
              act.selected.ptr(4L * i * h), act.normed.ptr(4L * row * h), 4L * h, stream);
          local[i] = i;
        }
        stack.lmHead(act.selected.ptr(), count);
        if (greedy) {
          stack.argmax(count);
        }
        if (sampling != null) {
          SamplingBatch group = new SamplingBatch();
          for (int i = 0; i < count; i++) {
            group.addRowOf(sampling, wanted.get(g0 + i));
          }
          SampledTokens part =
              readback.samplesOnDevice(local, group)
                  ? readback.sample(group)
                  : group.sampleOnCpu((float[]) readback.collect(local, 0, false, count), vocab);
          for (int i = 0; i < count; i++) {
            sampled.copyRowFrom(part, i, wanted.get(g0 + i));
          }
          continue;
        }
        Object part = readback.collect(local, 0, greedy, count);
        for (int i = 0; i < count; i++) {
          int r = wanted.get(g0 + i);
          if (greedy) {
            chosen[r] = ((int[]) part)[i];
          } else {
            System.arraycopy((float[]) part, i * vocab, logits, r * vocab, vocab);
          }
        }
      }
    }
    stream.synchronize();
    return sampled != null ? sampled : greedy ? chosen : logits;
  }

  @Override
  public void close() {
    try {
      gpu.run(
          () -> {
            if (stream != null) {
              stream.synchronize();
            }
            Resources.closeAll(
                hostDrafts,
                graphs,
                pool,
                inputs,
                grouped,
                mlaPrefill,
                segments,
                tp,
                allToAll,
                gqa,
                dsa,
                act,
                ops,
                weights,
                readback,
                stream);
          });
    } finally {
      if (ownsThreadAndStore) {
        gpu.close();
        store.close();
      }
    }
  }

  @Override
  public java.util.Map<String, java.util.Map<String, Double>> takeStepProfiles() {
    return profiles.take();
  }
}
