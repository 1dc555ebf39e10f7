package dev.ringmaster.model.arch;

import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.model.config.ModelConfigParser;
import dev.ringmaster.parallel.AllReduceAlgorithm;
import dev.ringmaster.parallel.CollectiveStats;
import dev.ringmaster.parallel.LocalWorld;
import java.nio.file.Path;
import java.util.List;

/**
 * A model spread over in-process ranks (one platform thread each, exchanging data through the
 * in-process collectives): every step runs on all ranks together and rank 0's logits are returned.
 * This is how the CPU backend runs {@code --tp-size} / {@code --ep-size}, and how tensor and expert
 * parallelism are checked against the single-rank model.
 */
public final class ParallelCausalLm implements LanguageModel, CollectiveReporting {
  private final LocalWorld world;
  private final List<CausalLm> ranks;

  private ParallelCausalLm(LocalWorld world, List<CausalLm> ranks) {
    this.world = world;
    this.ranks = ranks;
  }

  /** Loads every rank's shard of {@code dir}, in parallel. */
  public static ParallelCausalLm load(Path dir, ParallelConfig parallel, AllReduceAlgorithm algo) {
    // Fail on indivisible dimensions (or a bad model directory) before starting any rank.
    ShardPlan.check(ModelConfigParser.parse(dir), parallel);
    LocalWorld world = LocalWorld.create(parallel.tpSize(), algo);
    List<CausalLm> ranks =
        world.call(g -> CausalLm.load(dir, new RankContext(g.rank(), parallel, g)));
    return new ParallelCausalLm(world, ranks);
  }

  /** Per-rank counts and bytes of the collectives issued so far (rank 0's view). */
  public CollectiveStats collectiveStats() {
    return world.group(0).stats();
  }

  @Override
  public java.util.Map<String, Long> collectivesDuring(Runnable step) {
    java.util.Map<String, Long> seen = new java.util.LinkedHashMap<>();
    CollectiveStats stats = world.group(0).stats();
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
              int r = g.rank();
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
