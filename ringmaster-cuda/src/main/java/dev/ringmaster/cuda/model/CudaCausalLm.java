package dev.ringmaster.cuda.model;

import dev.ringmaster.backend.cpu.model.CausalLm;
import dev.ringmaster.cuda.CudaProbe;
import dev.ringmaster.cuda.CudaRuntime;
import dev.ringmaster.cuda.GpuThread;
import dev.ringmaster.cuda.kernels.MlaFusedDecode;
import dev.ringmaster.cuda.kernels.MlaKernels;
import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.model.config.ModelConfigParser;
import dev.ringmaster.model.weights.WeightStore;
import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.DraftHead;
import dev.ringmaster.runtime.HiddenCapture;
import dev.ringmaster.runtime.HiddenLogits;
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
  /**
   * Most new tokens of one sequence for which a step runs decode-shaped (every token a row of the
   * decode kernels, attending over the cache; a decode graph where one fits): a verify pass of up
   * to this many draft tokens plus one. Runs this short take the split kernels in a prefill chunk
   * too ({@link PrefillSegments#MIN_GEMM_TOKENS}), so the decode shape gives them the same
   * attention with fewer launches.
   */
  static final int FEW_TOKENS_PER_SEQ = PrefillSegments.MIN_GEMM_TOKENS - 1;

  private final ModelConfig cfg;
  private final Path dir; // null on a tensor-parallel rank
  private final WeightStore store;
  private final GpuThread gpu;
  private final CudaModelOptions options;
  private final RankShard shard;
  private final boolean ownsThreadAndStore;
  private final ModelDeviceParts parts;
  private final StepProfiles profiles = new StepProfiles();
  private volatile String verifyProfileLabel; // null: verify passes are not profiled
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
    this.parts = new ModelDeviceParts(cfg, store, o, shard, reportsProgress);
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
    return parts.collectives;
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
    ModelConfig cfg =
        ModelConfigParser.parse(dir).withIndexerCache(options.tuning().indexerCache());
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
    System.err.print(lm.parts.plan.describe());
    if (options.pdl()) {
      System.err.println("programmatic dependent launch: on");
    }
    return lm;
  }

  private void setUp() {
    parts.build(gpu.device());
  }

  /** Whether this model's kernels launch as programmatic dependent launches ({@code pdl}). */
  boolean programmaticDependentLaunch() {
    return parts.ops.kernels.programmaticDependentLaunch();
  }

  /** Whether decode sizes were captured a second time for long contexts (without fused MLA). */
  boolean capturedLongContextGraphs() {
    return parts.graphs.hasLongContext();
  }

  /** Where the GPU's memory went (weights, activations, graphs, KV cache). */
  public MemoryPlan memoryPlan() {
    return parts.plan;
  }

  @Override
  public java.util.OptionalLong kvCapacityTokens() {
    return java.util.OptionalLong.of(parts.plan.kvTokens());
  }

  /** The GPU cache's block size: one scheduler page is one block. */
  @Override
  public java.util.OptionalInt kvPageSize() {
    return java.util.OptionalInt.of(parts.pool.blockSize());
  }

  /** The decode sizes captured as graphs (empty with {@code --disable-cuda-graph}). */
  @Override
  public List<Integer> decodeGraphBatchSizes() {
    return parts.graphs.sizes();
  }

  /**
   * The paged cache's bf16 rows (MLA: the latent and rotary key; GQA: this rank's keys and values).
   */
  @Override
  public long kvBytesPerToken() {
    return BlockPool.bytes(cfg.numLayers(), 1, 1, parts.cacheRowWidth)
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
    return parts.pool.freeBlocks();
  }

  @Override
  public long weightBytes() {
    return store.totalBytes();
  }

  @Override
  public KvCache newCache() {
    return newCache(parts.pool.own());
  }

  @Override
  public KvCache newCache(KvBlockAllocator blocks) {
    parts.pool.bind(blocks);
    var table = blocks.newTable();
    return KvCache.ofExternal(new GpuKvCache(parts.pool, table), table);
  }

  /** The model's own allocator over the whole storage. */
  KvBlockAllocator ownBlocks() {
    return parts.pool.own();
  }

  /**
   * A storage view of this rank for a tensor-parallel cache whose block table (shared by every
   * rank, owned by the sharded cache) comes from {@code blocks}.
   */
  KvCache shardView(KvBlockAllocator blocks, dev.ringmaster.runtime.KvBlockTable table) {
    parts.pool.bind(blocks);
    return KvCache.ofExternal(new GpuKvCache(parts.pool, table));
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
    StepArguments step =
        StepArguments.check(
            tokens,
            layout,
            caches,
            rows,
            cfg.vocabSize(),
            parts.inputs,
            parts.pool,
            parts.act.logitRows,
            parts.dsa != null);
    GpuKvCache[] seqCaches = step.caches();
    boolean decodeShaped = step.decodeShaped();
    boolean oneEach = step.oneTokenEach();
    // A verify pass's rows may take the fused MLA launch: it builds the step's rows of a sequence
    // itself where it appends them (MlaFusedDecode.Append), for runs of consecutive positions.
    boolean fusedVerify =
        !oneEach
            && options.tuning().mlaFusedVerify()
            && step.consecutivePositions()
            && step.mostTokensPerSeq() <= MlaFusedDecode.MAX_APPEND_ROWS;
    int numSeqs = layout.numSeqs();
    Object out =
        gpu.call(
            () -> {
              parts.stack.captureHiddenInto(
                  hidden == null || hidden.capture().isFinal() ? null : hidden);
              try {
                return decodeShaped
                    ? decodeOnGpu(
                        tokens,
                        layout,
                        seqCaches,
                        rows,
                        greedy,
                        sampling,
                        oneEach,
                        fusedVerify,
                        hidden)
                    : prefillOnGpu(tokens, layout, seqCaches, rows, greedy, sampling, hidden);
              } finally {
                parts.stack.captureHiddenInto(null);
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

  /** The step's logits sampled on the host when {@code sampling} is given, else as they are. */
  private Object sampleOnHost(Object logits, SamplingBatch sampling) {
    return sampling == null ? logits : sampling.sampleOnCpu((float[]) logits, cfg.vocabSize());
  }

  /**
   * A decode-shaped step: every token one row of the decode kernels (its sequence's block table
   * row, its own position and slot), replayed from the decode graph of the smallest captured size
   * that holds the step's tokens, or eager past the largest. Several tokens of one sequence (a
   * verify pass) each attend causally up to their own position: the separate MLA kernels append
   * every row before any row attends; the fused launch, where {@code fusedVerify} lets it take the
   * step, builds the step's rows of a sequence in every block that reads them. A step that captures
   * layer inputs runs eagerly. With profiling on, the first one-token-each step of each padded
   * size, and the first verify pass of each shape while {@link #profileVerifyPasses} names them,
   * are also run eagerly under the profiler.
   */
  private Object decodeOnGpu(
      int[] tokens,
      BatchLayout layout,
      GpuKvCache[] caches,
      int[] rows,
      boolean greedy,
      SamplingBatch sampling,
      boolean oneEach,
      boolean fusedVerify,
      StepHiddenStates hidden) {
    int n = tokens.length;
    boolean eager = hidden != null && !hidden.capture().isFinal();
    int bucket = eager ? -1 : parts.graphs.bucketFor(n);
    int padded = bucket > 0 ? bucket : n;
    int[] ids = new int[padded];
    int[] pos = new int[padded];
    int[] seq = new int[padded];
    int[] slots = new int[padded];
    int width = parts.inputs.maxBlocksPerSeq;
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
        slots[t] = caches[s].block(p) * parts.pool.blockSize() + p % parts.pool.blockSize();
        maxLen = Math.max(maxLen, p + 1);
      }
    }
    // Padding rows: token 0 at position 0 of table row t (t >= n >= sequences: padding block).
    for (int t = n; t < padded; t++) {
      seq[t] = t;
    }
    parts.inputs.upload(parts.stream, padded, n, ids, pos, seq, slots, table, padded);
    boolean longContext = maxLen > parts.denseContextLimit();
    boolean unfused = longContext || !(oneEach || fusedVerify);
    parts.stack.useSparseAttention(parts.sparseDecode() && longContext, 0, null);
    if (hidden != null) {
      hidden.chunk(0, n);
    }
    int fusedTokens = unfused ? 0 : parts.mlaFusedTokens;
    // Sparse-attention models keep their second graph set for long contexts; the others' second set
    // (sizes up to the fused limit, captured unfused) serves long contexts and the verify passes
    // the
    // fused launch does not take.
    boolean secondSet = parts.dsa != null ? longContext : unfused;
    String verifyLabel = verifyProfileLabel;
    if (oneEach && options.profile() && profiles.first("decode bs=" + padded)) {
      profileDecode("decode bs=" + padded, padded, fusedTokens, secondSet);
    } else if (!oneEach && options.profile() && verifyLabel != null) {
      String what =
          String.format(
              "verify %d rows of %d sequences (bs=%d step), %s",
              n, layout.numSeqs(), padded, verifyLabel);
      if (profiles.first(what)) {
        profileDecode(what, padded, fusedTokens, secondSet);
      }
    }
    if (bucket > 0) {
      parts.graphs.replay(bucket, secondSet, parts.stream);
      if (parts.collectives != null) {
        parts.collectives.replayed(bucket);
      }
    } else {
      parts.stack.decodeStep(padded, parts.decodeSplits(padded), fusedTokens);
    }
    if (hidden != null) {
      hidden.finalRows(parts.act.normed, parts.stream);
    }
    if (sampling != null) {
      return parts.readback.samplesOnDevice(rows, sampling)
          ? parts.readback.sample(sampling)
          : sampleOnHost(parts.readback.collect(rows, 0, false, rows.length), sampling);
    }
    return parts.readback.collect(rows, 0, greedy, rows.length);
  }

  /**
   * Profiles an eager decode-shaped step of {@code bs} rows as {@code what}, then times it as it
   * really runs ({@code secondSet}: from the second graph set, {@link DecodeGraphSets#replay}).
   */
  private void profileDecode(String what, int bs, int fusedTokens, boolean secondSet) {
    int bucket = parts.graphs.bucketFor(bs);
    profiles.profileDecode(
        what,
        parts.stack,
        parts.stream,
        bs,
        parts.decodeSplits(bs),
        fusedTokens,
        bucket == bs,
        () -> {
          if (bucket == bs) {
            parts.graphs.replay(bs, secondSet, parts.stream);
          } else {
            parts.stack.decodeStep(bs, parts.decodeSplits(bs), fusedTokens);
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
    int width = parts.inputs.maxBlocksPerSeq;
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
    int chunk = parts.inputs.maxTokens;
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
        slots[i] = caches[seqOf[t]].block(p) * parts.pool.blockSize() + p % parts.pool.blockSize();
        maxLen = Math.max(maxLen, p + 1);
        oneEach &= i == 0 || seq[i] != seq[i - 1];
      }
      parts.inputs.upload(
          parts.stream, len, len, ids, pos, seq, slots, c0 == 0 ? table : null, numSeqs);
      int splits =
          parts.gqa != null
              ? parts.gqa.splits(len, maxLen, parts.sms)
              : MlaKernels.mlaSplits(
                  len, parts.localHeads(), maxLen, parts.sms, parts.act.mla.splitLimit(len));
      // Prefill chunks take the fused MLA launch for one token a sequence only.
      int fusedTokens = maxLen > parts.denseContextLimit() || !oneEach ? 0 : parts.mlaFusedTokens;
      boolean sparse = parts.dsa != null && maxLen > parts.denseContextLimit();
      parts.stack.useSparseAttention(
          sparse, maxLen, sparse ? GpuSparseAttention.runs(seq, pos, len) : null);
      boolean groupedExperts = len >= parts.groupedMinTokens();
      if (hidden != null) {
        hidden.chunk(c0, len);
      }
      if (parts.segments != null) {
        parts.segments.plan(
            len,
            seq,
            pos,
            parts.mlaPrefill.maxContext(),
            parts.mlaPrefill.expandedMaxContext(),
            parts.stream);
        parts.stack.usePrefillSegments(parts.segments, parts.mlaPrefill);
      }
      try {
        if (options.profile() && c0 == 0 && profiles.first("prefill chunk of " + len + " tokens")) {
          // An unprofiled pass first, so the profile shows warm launches (cuBLAS picks and loads
          // its kernels on a shape's first call). Running the chunk twice is idempotent: the
          // second pass appends the same cache rows and computes the same outputs.
          parts.stack.forward(len, splits, groupedExperts, fusedTokens);
          parts.stack.beginProfile();
          parts.stack.forward(len, splits, groupedExperts, fusedTokens);
          java.util.Map<String, Double> groups = parts.stack.endProfile();
          String what = "prefill chunk of " + len + " tokens";
          profiles.put(what, groups);
          System.err.println(StepProfiler.format(what, groups));
        } else {
          parts.stack.forward(len, splits, groupedExperts, fusedTokens);
        }
      } finally {
        parts.stack.usePrefillSegments(null, null);
      }
      if (hidden != null) {
        hidden.finalRows(parts.act.normed, parts.stream);
      }
      // The requested rows of this chunk, in groups that fit the logits buffer.
      List<Integer> wanted = new ArrayList<>();
      for (int r = 0; r < rows.length; r++) {
        if (rows[r] >= c0 && rows[r] < c0 + len) {
          wanted.add(r);
        }
      }
      for (int g0 = 0; g0 < wanted.size(); g0 += parts.act.logitRows) {
        int count = Math.min(parts.act.logitRows, wanted.size() - g0);
        int[] local = new int[count];
        for (int i = 0; i < count; i++) {
          int row = rows[wanted.get(g0 + i)] - c0;
          CudaDriverAccess.copyOnDevice(
              parts.act.selected.ptr(4L * i * h),
              parts.act.normed.ptr(4L * row * h),
              4L * h,
              parts.stream);
          local[i] = i;
        }
        parts.stack.lmHead(parts.act.selected.ptr(), count);
        if (greedy) {
          parts.stack.argmax(count);
        }
        if (sampling != null) {
          SamplingBatch group = new SamplingBatch();
          for (int i = 0; i < count; i++) {
            group.addRowOf(sampling, wanted.get(g0 + i));
          }
          SampledTokens part =
              parts.readback.samplesOnDevice(local, group)
                  ? parts.readback.sample(group)
                  : group.sampleOnCpu(
                      (float[]) parts.readback.collect(local, 0, false, count), vocab);
          for (int i = 0; i < count; i++) {
            sampled.copyRowFrom(part, i, wanted.get(g0 + i));
          }
          continue;
        }
        Object part = parts.readback.collect(local, 0, greedy, count);
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
    parts.stream.synchronize();
    return sampled != null ? sampled : greedy ? chosen : logits;
  }

  @Override
  public void close() {
    try {
      gpu.run(
          () -> {
            if (parts.stream != null) {
              parts.stream.synchronize();
            }
            Resources.closeAll(parts.resourcesInCloseOrder(hostDrafts));
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

  @Override
  public void profileVerifyPasses(String label) {
    verifyProfileLabel = label;
  }
}
