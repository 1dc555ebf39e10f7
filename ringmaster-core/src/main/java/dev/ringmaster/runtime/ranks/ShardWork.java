package dev.ringmaster.runtime.ranks;

import dev.ringmaster.runtime.KvCache;

/**
 * One rank's part of a step over sharded caches ({@link RankGroup#stepOnShards}).
 *
 * @param <T> what the rank returns
 */
@FunctionalInterface
public interface ShardWork<T> {
  /**
   * Runs rank {@code rank}'s part on its shards.
   *
   * @param shards each sequence's cache shard for this rank, in the step's sequence order
   */
  T run(int rank, KvCache[] shards) throws Exception;
}
