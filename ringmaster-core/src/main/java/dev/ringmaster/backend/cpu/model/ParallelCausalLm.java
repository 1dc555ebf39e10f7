package dev.ringmaster.backend.cpu.model;

import dev.ringmaster.backend.cpu.CpuKernelContext;
import dev.ringmaster.model.arch.ParallelConfig;
import dev.ringmaster.model.arch.RankContext;
import dev.ringmaster.model.arch.ShardPlan;
import dev.ringmaster.model.config.IndexerCacheDtype;
import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.model.config.ModelConfigParser;
import dev.ringmaster.parallel.AllReduceAlgorithm;
import dev.ringmaster.parallel.CollectiveStats;
import dev.ringmaster.parallel.LocalRanks;
import dev.ringmaster.parallel.LocalWorld;
import dev.ringmaster.parallel.ProcessGroup;
import dev.ringmaster.parallel.WorldFailure;
import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.CollectiveReporting;
import dev.ringmaster.runtime.KernelTuning;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.runtime.LanguageModel;
import dev.ringmaster.runtime.ranks.FailurePolicy;
import dev.ringmaster.runtime.ranks.RankGroup;
import dev.ringmaster.runtime.ranks.RankWorker;
import dev.ringmaster.runtime.ranks.StepFailure;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * A model spread over ranks that this JVM drives (one platform thread each): every step runs on all
 * local ranks together and the first local rank's logits are returned (every rank computes the same
 * logits). With a {@link LocalWorld} all ranks are here, exchanging data through the in-process
 * collectives: this is how the CPU backend runs {@code --tp-size} / {@code --ep-size}, and how
 * tensor and expert parallelism are checked against the single-rank model. With another {@link
 * LocalRanks} (a TCP world) this JVM holds one node's share of the ranks, and the other nodes run
 * the same steps on theirs.
 *
 * <p>The ranks run on a {@link RankGroup} with a platform thread per local rank, kept for the
 * model's life; a rank that fails aborts the world, so the others wake from their collectives, and
 * the step throws a {@link dev.ringmaster.parallel.CollectiveException} naming the first failure.
 * All local ranks share one {@link CpuKernelContext} (one thread pool for the machine's cores).
 */
public final class ParallelCausalLm implements LanguageModel, CollectiveReporting {
  private final LocalRanks world;
  private final RankGroup group;
  private final List<CausalLm> ranks;
  private final CpuKernelContext ownedKernels;

  private ParallelCausalLm(
      LocalRanks world, RankGroup group, List<CausalLm> ranks, CpuKernelContext ownedKernels) {
    this.world = world;
    this.group = group;
    this.ranks = ranks;
    this.ownedKernels = ownedKernels;
  }

  /**
   * Loads every rank's shard of {@code dir} onto in-process ranks, in parallel, on the {@linkplain
   * CpuKernelContext#shared() shared} kernel context.
   */
  public static ParallelCausalLm load(Path dir, ParallelConfig parallel, AllReduceAlgorithm algo) {
    return load(dir, parallel, algo, KernelTuning.defaults());
  }

  /**
   * Loads every rank's shard of {@code dir} onto in-process ranks, in parallel, with the CPU kernel
   * settings and indexer key cache format of {@code tuning}; a thread pool made for them closes
   * with the model.
   */
  public static ParallelCausalLm load(
      Path dir, ParallelConfig parallel, AllReduceAlgorithm algo, KernelTuning tuning) {
    // Fail on indivisible dimensions (or a bad model directory) before starting any rank.
    ShardPlan.check(ModelConfigParser.parse(dir), parallel);
    CpuKernelContext kernels = CpuKernelContext.of(tuning);
    try {
      return load(
          dir,
          parallel,
          LocalWorld.create(parallel.tpSize(), algo),
          kernels,
          kernels,
          tuning.indexerCache());
    } catch (RuntimeException | Error e) {
      kernels.close();
      throw e;
    }
  }

  /**
   * Loads the shards of {@code dir} that {@code local}'s ranks hold (their global ranks in a world
   * of {@code parallel.tpSize()}), in parallel, each on the thread that will run its steps, on the
   * shared kernel context.
   */
  public static ParallelCausalLm load(Path dir, ParallelConfig parallel, LocalRanks local) {
    return load(dir, parallel, local, CpuKernelContext.shared(), null, IndexerCacheDtype.AUTO);
  }

  /**
   * {@link #load(Path, ParallelConfig, LocalRanks)} with the CPU kernel settings and indexer key
   * cache format of {@code tuning}; a thread pool made for them closes with the model.
   */
  public static ParallelCausalLm load(
      Path dir, ParallelConfig parallel, LocalRanks local, KernelTuning tuning) {
    CpuKernelContext kernels = CpuKernelContext.of(tuning);
    try {
      return load(dir, parallel, local, kernels, kernels, tuning.indexerCache());
    } catch (RuntimeException | Error e) {
      kernels.close();
      throw e;
    }
  }

  private static ParallelCausalLm load(
      Path dir,
      ParallelConfig parallel,
      LocalRanks local,
      CpuKernelContext kernels,
      CpuKernelContext owned,
      IndexerCacheDtype indexerCache) {
    ShardPlan.check(ModelConfigParser.parse(dir).withIndexerCache(indexerCache), parallel);
    List<ProcessGroup> groups = local.groups();
    for (int i = 0; i < groups.size(); i++) {
      ProcessGroup g = groups.get(i);
      if (g.worldSize() != parallel.tpSize() || g.rank() != groups.getFirst().rank() + i) {
        throw new IllegalArgumentException(
            "local rank "
                + i
                + " is rank "
                + g.rank()
                + " of "
                + g.worldSize()
                + "; the layout needs consecutive ranks of --tp-size "
                + parallel.tpSize());
      }
    }
    RankGroup group = rankGroup(local);
    try {
      List<CausalLm> ranks =
          group.all(
              r -> {
                ProcessGroup g = groups.get(r);
                return CausalLm.load(
                    dir, new RankContext(g.rank(), parallel, g), kernels, indexerCache);
              });
      return new ParallelCausalLm(local, group, ranks, owned);
    } catch (RuntimeException | Error e) {
      group.close();
      throw e;
    }
  }

  /**
   * A thread per local rank; a failure aborts the world (waking the ranks' collectives) and is
   * reported as the world's calls report it, naming the global rank.
   */
  private static RankGroup rankGroup(LocalRanks local) {
    List<ProcessGroup> groups = local.groups();
    int first = groups.getFirst().rank();
    List<RankWorker> workers = new ArrayList<>();
    for (ProcessGroup g : groups) {
      workers.add(RankWorker.ownThread("ringmaster-rank-" + g.rank()));
    }
    FailurePolicy policy =
        new FailurePolicy() {
          @Override
          public void abort(int rank, Throwable cause) {
            local.abort(rank < 0 ? -1 : first + rank, cause);
          }

          @Override
          public RuntimeException report(StepFailure f) {
            int global = f.firstRank() < 0 ? -1 : first + f.firstRank();
            return new WorldFailure(global, f.first()).exception(f.errors());
          }
        };
    return new RankGroup(workers, policy);
  }

  /** Number of ranks in this JVM. */
  public int localRanks() {
    return ranks.size();
  }

  /** Per-rank counts and bytes of the collectives issued so far (the first local rank's view). */
  public CollectiveStats collectiveStats() {
    return world.groups().getFirst().stats();
  }

  @Override
  public java.util.Map<String, Long> collectivesDuring(Runnable step) {
    java.util.Map<String, Long> seen = new java.util.LinkedHashMap<>();
    CollectiveStats stats = world.groups().getFirst().stats();
    stats.setListener((op, algorithm, bytes) -> seen.merge(op + " " + bytes + " B", 1L, Long::sum));
    try {
      step.run();
    } finally {
      stats.setListener(null);
    }
    return seen;
  }

  @Override
  public ModelConfig config() {
    return ranks.getFirst().config();
  }

  @Override
  public KvCache newCache() {
    return group.newShardedCache(r -> ranks.get(r).newCache());
  }

  /** A cache with one block table for all ranks' shards (which take no ids of their own). */
  @Override
  public KvCache newCache(dev.ringmaster.runtime.KvBlockAllocator blocks) {
    return group.newShardedCache(r -> ranks.get(r).newCache(), blocks.newTable());
  }

  /**
   * Cache bytes per token over this JVM's ranks: under MLA every rank holds the whole latent and
   * indexer key cache, so the figure is the local rank count times one rank's; under GQA the ranks'
   * shares of the KV heads add up to one model's.
   */
  @Override
  public long kvBytesPerToken() {
    long sum = 0;
    for (CausalLm r : ranks) {
      sum += r.kvBytesPerToken();
    }
    return sum;
  }

  @Override
  public long weightBytes() {
    return ranks.getFirst().weightBytes();
  }

  @Override
  public float[] forward(int[] tokens, BatchLayout layout, KvCache[] caches, int[] logitRows) {
    return group.stepOnShards(
        layout, caches, (r, shards) -> ranks.get(r).forward(tokens, layout, shards, logitRows));
  }

  @Override
  public void close() {
    try {
      for (CausalLm r : ranks) {
        r.close();
      }
    } finally {
      group.close();
      if (ownedKernels != null) {
        ownedKernels.close();
      }
    }
  }
}
