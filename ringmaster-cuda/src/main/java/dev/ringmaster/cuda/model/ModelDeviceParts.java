package dev.ringmaster.cuda.model;

import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.DeviceInfo;
import dev.ringmaster.cuda.kernels.MlaFusedDecode;
import dev.ringmaster.cuda.kernels.MlaKernels;
import dev.ringmaster.cuda.kernels.MlaPrefillAttention;
import dev.ringmaster.cuda.kernels.MoeKernels;
import dev.ringmaster.model.arch.RopeTable;
import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.model.weights.WeightStore;
import dev.ringmaster.runtime.KernelTuning;
import java.util.List;
import java.util.Map;

/**
 * The device parts of one {@link CudaCausalLm} (one GPU, or one rank of a parallel model): its
 * stream, weights, activations, kernels, paged KV cache, layer stack, decode graphs and memory
 * plan, built once by {@link #build} on the model's GPU thread and closed with the model. The
 * fields stay null until built; the model's steps read them.
 */
final class ModelDeviceParts {
  /** Context length the decode split count is chosen for (graphs cannot see the real one). */
  private static final int DECODE_NOMINAL_CONTEXT = 2048;

  /** Longest context the prefill GEMM path gathers (its scratch: 151 MB at D = 576). */
  private static final int PREFILL_GEMM_MAX_CONTEXT = 131_072;

  private final ModelConfig cfg;
  private final WeightStore store;
  private final CudaModelOptions options;
  private final RankShard shard;
  private final boolean reportsProgress;
  TensorParallelOps tp;
  ExpertAllToAll allToAll;
  StepCollectives collectives;
  CudaStream stream;
  GpuOps ops;
  GpuWeights weights;
  Activations act;
  StepInputs inputs;
  BlockPool pool;
  GpuModelOps stack;
  GpuGqaAttention gqa;
  GpuSparseAttention dsa; // DeepSeek Sparse Attention models only
  int cacheRowWidth;
  DecodeGraphSets graphs = DecodeGraphSets.none();

  /** Most tokens of a short-context step that take the fused MLA launch (0 under parallelism). */
  int mlaFusedTokens;

  GroupedExperts grouped;
  MlaPrefillAttention mlaPrefill;
  PrefillSegments segments;
  StepReadback readback;
  MemoryPlan plan;
  int sms;

  /**
   * Parts of a model over {@code store}'s weights (owned by the caller), none on the device yet.
   * {@code reportsProgress}: the upload and graph capture show their progress.
   */
  ModelDeviceParts(
      ModelConfig cfg,
      WeightStore store,
      CudaModelOptions options,
      RankShard shard,
      boolean reportsProgress) {
    this.cfg = cfg;
    this.store = store;
    this.options = options;
    this.shard = shard;
    this.reportsProgress = reportsProgress;
  }

  /**
   * Uploads the weights, allocates the activations, kernels' scratch and layer stack, sizes the KV
   * cache from what is free, captures the decode graphs and records the memory plan (GPU thread).
   * What was built before a failure stays assigned, for {@link #resourcesInCloseOrder} to close.
   */
  void build(DeviceInfo dev) {
    sms = dev.multiprocessors();
    stream = CudaStream.create();
    weights = GpuWeights.upload(cfg, store, stream, shard, reportsProgress);
    long total = CudaDriverAccess.memoryInfo()[1];
    List<Integer> sizes = MemoryPlan.graphSizes(options, total);
    int maxBs = sizes.isEmpty() ? 0 : sizes.get(sizes.size() - 1);
    int logitRows = Math.max(maxBs, 64);
    int maxTokens = Math.max(options.chunkedPrefillSize(), logitRows);
    RopeTable rope = allocateActivations(maxTokens, logitRows);
    // KV cache: the static share minus the weights, bounded by what is free now less graphs.
    double fraction =
        options.memFractionStatic() != null
            ? options.memFractionStatic()
            : MemoryPlan.defaultMemFractionStatic(
                total, options.chunkedPrefillSize(), Math.max(maxBs, 1));
    allocateKvCache(rope, total, fraction, sizes, maxBs, maxTokens, logitRows);
    stack = shard.parallel() ? parallelStack(rope) : singleStack(rope);
    stream.synchronize();
    if (shard.parallel() && !sizes.isEmpty()) {
      // The warm-up before each capture is the first collective: ranks that finished uploading
      // early wait here (the peer kernels' barrier would give up after 30 s).
      shard.comm().barrier();
    }
    captureGraphs(sizes);
    plan = memoryPlan(dev, total, fraction);
  }

  /**
   * The kernels' scratch, the activations and logits readback, the rotary table, the grouped expert
   * GEMMs and MLA prefill GEMM path where they apply, and the collectives' buffers; returns the
   * rotary table for the attention layers.
   */
  private RopeTable allocateActivations(int maxTokens, int logitRows) {
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
    return rope;
  }

  /**
   * The attention's own buffers (GQA, sparse attention) and the paged KV cache: as many blocks as
   * the static share {@code fraction} of {@code total} memory leaves after the weights, bounded by
   * what is free now less the graphs' reserve; then the step inputs and block table.
   */
  private void allocateKvCache(
      RopeTable rope,
      long total,
      double fraction,
      List<Integer> sizes,
      int maxBs,
      int maxTokens,
      int logitRows) {
    boolean usesMla = cfg.architecture().usesMla();
    boolean sparseAttention = cfg.architecture().usesSparseAttention();
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
              cfg.sparseAttention().indexHeads(),
              cfg.sparseAttention().indexHeadDim(),
              cfg.sparseAttention().fp8Keys());
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
            sparseAttention && cfg.sparseAttention().fp8Keys(),
            stream);
    inputs = new StepInputs(maxTokens, tableRows, maxBlocksPerSeq);
    inputs.zero(stream);
  }

  /**
   * Captures the decode graphs of {@code sizes}, and a second set for long contexts: unfused for
   * sizes up to the fused MLA limit, with sparse attention on sparse attention models.
   */
  private void captureGraphs(List<Integer> sizes) {
    boolean sparseAttention = cfg.architecture().usesSparseAttention();
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
              stack.useSparseAttention(sparseDecode(), 0, null);
              stack.decodeStep(bs, decodeSplits(bs), 0);
            },
            reportsProgress);
  }

  /** Where the device memory went, once everything is allocated and captured. */
  private MemoryPlan memoryPlan(DeviceInfo dev, long total, double fraction) {
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
    return new MemoryPlan(
        dev.toString(),
        total,
        fraction,
        weights.bytes,
        activationBytes,
        graphBytes,
        perSize,
        pool.bytes(),
        pool.indexerBytes(),
        cfg.sparseAttention() == null
            ? "none"
            : cfg.sparseAttention().fp8Keys() ? "fp8_e4m3" : "bf16",
        pool.capacityTokens(),
        options.blockSize(),
        CudaDriverAccess.memoryInfo()[0]);
  }

  /**
   * Whether decode steps past {@link #denseContextLimit} attend sparsely: sparse attention models
   * do, unless the kernel option {@code dsa-dense-decode} keeps sparse attention to prefill.
   */
  boolean sparseDecode() {
    return dsa != null && !options.tuning().dsaDenseDecode();
  }

  /**
   * Longest context a step may have and still attend densely: {@code index_topk} for sparse
   * attention models (dense and sparse attention are equal there; no limit under the kernel option
   * {@code dsa-sparse-attention=false}), else the fused MLA launch's limit.
   */
  int denseContextLimit() {
    if (dsa == null) {
      return options.tuning().mlaFusedMaxContext();
    }
    return options.tuning().dsaSparseAttention() ? dsa.topK() : Integer.MAX_VALUE;
  }

  /**
   * Fewest chunk tokens for the per-expert GEMMs (the {@code moe-grouped-min-tokens} kernel option
   * overrides the automatic choice, to compare with the tensor-core expert kernels).
   */
  int groupedMinTokens() {
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
  int localHeads() {
    return shard.share(cfg.numHeads());
  }

  /** Splits of the KV length per decode query (the same with and without graphs). */
  int decodeSplits(int bs) {
    if (gqa != null) {
      return gqa.splits(bs, DECODE_NOMINAL_CONTEXT, sms);
    }
    return MlaKernels.mlaSplits(
        bs, localHeads(), DECODE_NOMINAL_CONTEXT, sms, act.mla.splitLimit(bs));
  }

  /**
   * The built parts in the order they close (graphs before the buffers they read, the stream last),
   * {@code first} ahead of them; unbuilt parts are null.
   */
  AutoCloseable[] resourcesInCloseOrder(AutoCloseable first) {
    return new AutoCloseable[] {
      first,
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
      stream
    };
  }
}
