package dev.ringmaster.cuda.model;

import dev.ringmaster.cuda.CudaProbe;
import dev.ringmaster.cuda.CudaRuntime;
import dev.ringmaster.cuda.GpuThread;
import dev.ringmaster.cuda.collective.AllReduceTableCache;
import dev.ringmaster.cuda.collective.AllReduceTuner;
import dev.ringmaster.cuda.collective.DeviceCommunicator;
import dev.ringmaster.cuda.collective.DeviceWorld;
import dev.ringmaster.model.arch.ParallelConfig;
import dev.ringmaster.model.arch.ShardPlan;
import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.model.config.ModelConfigParser;
import dev.ringmaster.model.weights.WeightStore;
import dev.ringmaster.parallel.AllReduceAlgorithm;
import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.CollectiveReporting;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.runtime.LanguageModel;
import dev.ringmaster.runtime.StepProfileReporting;
import dev.ringmaster.runtime.ranks.FailurePolicy;
import dev.ringmaster.runtime.ranks.RankGroup;
import dev.ringmaster.runtime.ranks.RankWorker;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;

/**
 * An MLA model spread over GPUs with tensor parallelism (heads, MLP and expert intermediate
 * dimensions, vocabulary) and optionally expert parallelism, either without all-to-all (each rank
 * computes its own experts for every token, the MoE output allreduced) or with it (each rank sends
 * its slice of the tokens to the experts' owners and gets the outputs back, {@link
 * ExpertAllToAll}): one rank per GPU, each a {@link CudaCausalLm} on its own GPU thread and stream,
 * with its shard of the weights, its own activations and its own paged latent cache (the latent is
 * replicated on every rank, as SGLang does for MLA). Two allreduces per layer plus one for the
 * embedding (under all-to-all, an MoE layer's allreduce becomes two all-to-alls and an allgather),
 * and an allgather of the LM head's vocabulary slices, all queued on the ranks' compute streams, so
 * each rank captures its decode steps in its own CUDA graphs and the ranks replay them in lockstep.
 *
 * <p>Every step runs on all ranks at once through a {@link RankGroup} whose workers are the ranks'
 * GPU threads themselves (so a step costs one hand-over per rank); rank 0's output is returned (all
 * ranks hold the same logits). NCCL collectives cannot be woken from another thread, so a failed
 * step waits for every rank and rethrows the first failure. The weights are split exactly as the
 * CPU's {@code ParallelCausalLm} splits them.
 */
public final class TensorParallelCudaLm
    implements LanguageModel, CollectiveReporting, StepProfileReporting {
  private final ModelConfig cfg;
  private final WeightStore store;
  private final List<CudaCausalLm> ranks;
  private dev.ringmaster.runtime.KvBlockAllocator ownBlocks;
  private final AutoCloseable world;
  private final RankGroup group;

  private TensorParallelCudaLm(
      ModelConfig cfg,
      WeightStore store,
      List<CudaCausalLm> ranks,
      List<GpuThread> threads,
      AutoCloseable world) {
    this.cfg = cfg;
    this.store = store;
    this.ranks = ranks;
    this.world = world;
    List<RankWorker> workers = new ArrayList<>();
    for (GpuThread t : threads) {
      workers.add(RankWorker.borrowed(t::execute));
    }
    this.group = new RankGroup(workers, FailurePolicy.waitForAll());
  }

  /**
   * Loads {@code dir} over the first {@code parallel.tpSize()} GPUs of this machine: forms the
   * device world ({@code worldOptions}: allreduce algorithm, custom allreduce on or off), with
   * {@code --allreduce auto} loads or measures this host's allreduce table, uploads every rank's
   * shard and captures every rank's graphs. Fails before touching a GPU when a dimension does not
   * divide (naming it), when fewer GPUs are visible, or for a non-MLA model.
   */
  public static TensorParallelCudaLm load(
      Path dir,
      CudaModelOptions options,
      ParallelConfig parallel,
      DeviceWorld.Options worldOptions) {
    CudaProbe probe = CudaRuntime.probe();
    if (!probe.available()) {
      throw new IllegalStateException("--device cuda: " + probe.reason());
    }
    ModelConfig cfg = ModelConfigParser.parse(dir);
    int nnodes = worldOptions.dist().nnodes();
    check(cfg, parallel, nnodes, probe.devices().size());
    int local = parallel.tpSize() / nnodes; // this node's ranks (global rank = node x local + i)
    DeviceWorld world =
        DeviceWorld.create(
            new DeviceWorld.Options(
                local,
                worldOptions.dist(),
                worldOptions.algorithm(),
                worldOptions.disableCustomAllReduce(),
                worldOptions.customMaxBytes(),
                worldOptions.initTimeout(),
                options.pdl()));
    world.log().forEach(l -> System.err.println("device world: " + l));
    List<GpuThread> threads = new ArrayList<>();
    List<DeviceCommunicator> comms = new ArrayList<>();
    for (int i = 0; i < local; i++) {
      threads.add(world.gpu(i));
      comms.add(world.comm(i));
    }
    try {
      if (worldOptions.algorithm() == AllReduceAlgorithm.AUTO) {
        // AUTO picks per message size from a table measured on this host (before the weights
        // take the memory) and cached until the GPUs, driver or NCCL change; a single GPU or a
        // world without peer kernels gets the rule's NCCL table without measuring.
        AllReduceTuner.tuneOrLoad(world, AllReduceTableCache.standard(), System.err);
      }
      return onRanks(dir, options, parallel, threads, comms, world);
    } catch (RuntimeException | Error e) {
      world.close();
      throw e;
    }
  }

  /**
   * Loads {@code dir} with local rank {@code i} on {@code threads.get(i)} reducing over {@code
   * comms.get(i)} (which says the rank's global number: on several nodes this JVM holds only its
   * node's ranks); {@code owner} (closed last by {@link #close}, may be null) owns the threads and
   * communicators. Ranks may share a GPU when their communicators allow it.
   */
  static TensorParallelCudaLm onRanks(
      Path dir,
      CudaModelOptions options,
      ParallelConfig parallel,
      List<GpuThread> threads,
      List<DeviceCommunicator> comms,
      AutoCloseable owner) {
    ModelConfig cfg = checked(dir, parallel);
    int tp = threads.size();
    if (tp == 0 || comms.size() != tp) {
      throw new IllegalArgumentException(
          tp + " GPU threads and " + comms.size() + " communicators for the local ranks");
    }
    WeightStore store = WeightStore.open(dir);
    List<CudaCausalLm> ranks = new ArrayList<>();
    for (int i = 0; i < tp; i++) {
      RankShard shard = RankShard.of(comms.get(i).rank(), parallel, comms.get(i));
      ranks.add(CudaCausalLm.rank(cfg, store, threads.get(i), options, shard, i == 0));
    }
    TensorParallelCudaLm lm = new TensorParallelCudaLm(cfg, store, ranks, threads, owner);
    try {
      lm.group.all(
          r -> {
            ranks.get(r).setUpRank();
            return null;
          });
    } catch (RuntimeException | Error e) {
      try {
        lm.closeRanks();
      } catch (RuntimeException closing) {
        e.addSuppressed(closing);
      } finally {
        lm.group.close();
        store.close();
      }
      throw e;
    }
    System.err.print(ranks.getFirst().memoryPlan().describe());
    return lm;
  }

  /**
   * Checks, before any GPU work, that {@code cfg} runs on the GPU in the layout {@code parallel}
   * over {@code nnodes} nodes with {@code visibleGpus} GPUs here: an MLA model, every split
   * dimension divisible (each one that is not is named, with its flag), the ranks divisible by the
   * nodes, and a GPU per rank of this node. Throws {@link IllegalArgumentException} for the model
   * or the flags and {@link IllegalStateException} for too few GPUs.
   */
  public static void check(ModelConfig cfg, ParallelConfig parallel, int nnodes, int visibleGpus) {
    checkModel(cfg, parallel);
    int tp = parallel.tpSize();
    if (nnodes < 1 || tp % nnodes != 0) {
      throw new IllegalArgumentException(
          "--tp-size " + tp + " is not divisible by --nnodes " + nnodes);
    }
    int local = tp / nnodes;
    if (local > visibleGpus) {
      throw new IllegalStateException(
          "--tp-size "
              + tp
              + (nnodes > 1 ? " over " + nnodes + " nodes" : "")
              + " needs "
              + local
              + (nnodes > 1 ? " GPUs per node, " : " GPUs, ")
              + visibleGpus
              + " visible");
    }
  }

  private static ModelConfig checked(Path dir, ParallelConfig parallel) {
    ModelConfig cfg = ModelConfigParser.parse(dir);
    checkModel(cfg, parallel);
    return cfg;
  }

  private static void checkModel(ModelConfig cfg, ParallelConfig parallel) {
    if (!cfg.architecture().usesMla()) {
      throw new IllegalArgumentException(
          cfg.architecture()
              + " runs on one GPU; tensor parallelism on GPUs is for MLA models only"
              + " (DeepSeek-V2/V3): use --tp-size 1, or --device cpu");
    }
    GpuModelSupport.check(cfg);
    GpuModelSupport.checkParallel(cfg);
    if (cfg.quantization().quantized()) {
      throw new IllegalArgumentException(
          "quantized checkpoints ("
              + cfg.quantization().method()
              + ", "
              + cfg.quantization().source()
              + ") run on one GPU: the tensor-parallel GPU path takes bf16, f16 or f32 weights;"
              + " use --tp-size 1, or --device cpu for a parallel quantized run");
    }
    // All-to-all needs --ep-size = --tp-size, which ParallelConfig already enforces.
    ShardPlan.check(cfg, parallel);
  }

  /** Ranks in the model. */
  public int size() {
    return ranks.size();
  }

  /** Rank {@code r}'s model (tests). */
  CudaCausalLm rank(int r) {
    return ranks.get(r);
  }

  /** Rank {@code r}'s memory plan (weights are this rank's shard). */
  public MemoryPlan memoryPlan(int r) {
    return ranks.get(r).memoryPlan();
  }

  @Override
  public ModelConfig config() {
    return cfg;
  }

  @Override
  public long weightBytes() {
    return store.totalBytes();
  }

  /** The smallest rank's pool (every rank caches every token's latent). */
  @Override
  public OptionalLong kvCapacityTokens() {
    long min = Long.MAX_VALUE;
    for (CudaCausalLm r : ranks) {
      min = Math.min(min, r.kvCapacityTokens().orElse(Long.MAX_VALUE));
    }
    return OptionalLong.of(min);
  }

  /** Rank 0's block size (every rank runs the same options). */
  @Override
  public java.util.OptionalInt kvPageSize() {
    return ranks.getFirst().kvPageSize();
  }

  /** Rank 0's captured decode sizes (every rank captures the same ones). */
  @Override
  public java.util.List<Integer> decodeGraphBatchSizes() {
    return ranks.getFirst().decodeGraphBatchSizes();
  }

  /** Every rank caches every token's latent, so a token costs one rank's bytes per rank. */
  @Override
  public long kvBytesPerToken() {
    long sum = 0;
    for (CudaCausalLm r : ranks) {
      sum += r.kvBytesPerToken();
    }
    return sum;
  }

  @Override
  public KvCache newCache() {
    return newCache(ownBlocks());
  }

  /**
   * One block table for every rank's storage (all ranks use the same block ids), from {@code
   * blocks}: it must fit the smallest rank's storage.
   */
  @Override
  public KvCache newCache(dev.ringmaster.runtime.KvBlockAllocator blocks) {
    var table = blocks.newTable();
    return group.newShardedCache(r -> ranks.get(r).shardView(blocks, table), table);
  }

  /** The model's own allocator, over the blocks every rank's storage has. */
  private synchronized dev.ringmaster.runtime.KvBlockAllocator ownBlocks() {
    if (ownBlocks == null) {
      ownBlocks = ranks.getFirst().ownBlocks();
      for (CudaCausalLm r : ranks) {
        if (r.ownBlocks().capacity() < ownBlocks.capacity()) {
          ownBlocks = r.ownBlocks();
        }
      }
    }
    return ownBlocks;
  }

  /**
   * Runs the step on every rank's GPU thread at once (the one block table of each cache grows
   * first, so a full allocator fails before any rank has started) and returns rank 0's logits.
   */
  @Override
  public float[] forward(int[] tokens, BatchLayout layout, KvCache[] caches, int[] logitRows) {
    return group.stepOnShards(
        layout, caches, (r, shards) -> ranks.get(r).forward(tokens, layout, shards, logitRows));
  }

  @Override
  public int[] forwardGreedy(int[] tokens, BatchLayout layout, KvCache[] caches, int[] logitRows) {
    return group.stepOnShards(
        layout,
        caches,
        (r, shards) -> ranks.get(r).forwardGreedy(tokens, layout, shards, logitRows));
  }

  /**
   * Runs {@code step} and returns the collectives rank 0 issued during it (those inside a replayed
   * decode graph included, as recorded when it was captured).
   */
  @Override
  public Map<String, Long> collectivesDuring(Runnable step) {
    Map<String, Long> seen = java.util.Collections.synchronizedMap(new LinkedHashMap<>());
    StepCollectives c = ranks.getFirst().collectives();
    c.reportTo(seen);
    try {
      step.run();
    } finally {
      c.reportTo(null);
    }
    synchronized (seen) {
      return new LinkedHashMap<>(seen);
    }
  }

  private void closeRanks() {
    RuntimeException first = null;
    for (CudaCausalLm r : ranks) {
      try {
        r.close();
      } catch (RuntimeException e) {
        if (first == null) {
          first = e;
        } else {
          first.addSuppressed(e);
        }
      }
    }
    if (first != null) {
      throw first;
    }
  }

  @Override
  public void close() {
    try {
      closeRanks();
    } finally {
      group.close();
      store.close();
      if (world != null) {
        try {
          world.close();
        } catch (Exception e) {
          throw new IllegalStateException("closing the GPU world failed", e);
        }
      }
    }
  }

  /** Rank 0's profiles (every rank profiles the same steps; the others' are dropped). */
  @Override
  public java.util.Map<String, java.util.Map<String, Double>> takeStepProfiles() {
    for (int r = 1; r < ranks.size(); r++) {
      ranks.get(r).takeStepProfiles();
    }
    return ranks.get(0).takeStepProfiles();
  }

  /** Every rank profiles the same verify passes (their eager runs issue the same collectives). */
  @Override
  public void profileVerifyPasses(String label) {
    for (CudaCausalLm rank : ranks) {
      rank.profileVerifyPasses(label);
    }
  }
}
