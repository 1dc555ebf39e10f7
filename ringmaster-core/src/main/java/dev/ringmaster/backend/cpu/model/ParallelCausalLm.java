package dev.ringmaster.backend.cpu.model;

import dev.ringmaster.model.arch.ParallelConfig;
import dev.ringmaster.model.arch.RankContext;
import dev.ringmaster.model.arch.ShardPlan;
import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.model.config.ModelConfigParser;
import dev.ringmaster.parallel.AllReduceAlgorithm;
import dev.ringmaster.parallel.CollectiveStats;
import dev.ringmaster.parallel.LocalRanks;
import dev.ringmaster.parallel.LocalWorld;
import dev.ringmaster.parallel.ProcessGroup;
import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.CollectiveReporting;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.runtime.LanguageModel;
import java.nio.file.Path;
import java.util.List;

/**
 * A model spread over ranks that this JVM drives (one platform thread each): every step runs on all
 * local ranks together and the first local rank's logits are returned (every rank computes the same
 * logits). With a {@link LocalWorld} all ranks are here, exchanging data through the in-process
 * collectives: this is how the CPU backend runs {@code --tp-size} / {@code --ep-size}, and how
 * tensor and expert parallelism are checked against the single-rank model. With another {@link
 * LocalRanks} (a TCP world) this JVM holds one node's share of the ranks, and the other nodes run
 * the same steps on theirs.
 */
public final class ParallelCausalLm implements LanguageModel, CollectiveReporting {
  private final LocalRanks world;
  private final List<CausalLm> ranks;
  private final int firstRank;

  private ParallelCausalLm(LocalRanks world, List<CausalLm> ranks) {
    this.world = world;
    this.ranks = ranks;
    this.firstRank = world.groups().getFirst().rank();
  }

  /** Loads every rank's shard of {@code dir} onto in-process ranks, in parallel. */
  public static ParallelCausalLm load(Path dir, ParallelConfig parallel, AllReduceAlgorithm algo) {
    // Fail on indivisible dimensions (or a bad model directory) before starting any rank.
    ShardPlan.check(ModelConfigParser.parse(dir), parallel);
    return load(dir, parallel, LocalWorld.create(parallel.tpSize(), algo));
  }

  /**
   * Loads the shards of {@code dir} that {@code local}'s ranks hold (their global ranks in a world
   * of {@code parallel.tpSize()}), in parallel.
   */
  public static ParallelCausalLm load(Path dir, ParallelConfig parallel, LocalRanks local) {
    ShardPlan.check(ModelConfigParser.parse(dir), parallel);
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
    List<CausalLm> ranks =
        local.call(g -> CausalLm.load(dir, new RankContext(g.rank(), parallel, g)));
    return new ParallelCausalLm(local, ranks);
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
    KvCache[] shards = new KvCache[ranks.size()];
    for (int r = 0; r < shards.length; r++) {
      shards[r] = ranks.get(r).newCache();
    }
    return KvCache.ofShards(shards);
  }

  @Override
  public long weightBytes() {
    return ranks.getFirst().weightBytes();
  }

  @Override
  public float[] forward(int[] tokens, BatchLayout layout, KvCache[] caches, int[] logitRows) {
    for (int s = 0; s < layout.numSeqs(); s++) {
      int end = layout.seqStart()[s + 1];
      if (end > layout.seqStart()[s]) {
        caches[s].ensureCapacity(layout.positions()[end - 1] + 1);
      }
    }
    List<float[]> out =
        world.call(
            g -> {
              int r = g.rank() - firstRank;
              KvCache[] mine = new KvCache[caches.length];
              for (int s = 0; s < mine.length; s++) {
                mine[s] = caches[s].shard(r);
              }
              return ranks.get(r).forward(tokens, layout, mine, logitRows);
            });
    for (int s = 0; s < layout.numSeqs(); s++) {
      caches[s].setLength(caches[s].shard(0).length());
    }
    return out.getFirst();
  }

  @Override
  public void close() {
    for (CausalLm r : ranks) {
      r.close();
    }
  }
}
