package dev.ringmaster.runtime.ranks;

import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.KvCache;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.IntFunction;

/**
 * The ranks of a model that run every step together, whatever they are: CPU ranks in this JVM, GPU
 * ranks each on its GPU's thread, or whole nodes reached over the network. Each rank has a {@link
 * RankWorker} (the thread its part runs on); a step submits one {@link RankWork} to every rank at
 * once, waits for all of them and returns rank 0's result, so all ranks meet in the step's
 * collectives.
 *
 * <p>When a rank fails, its {@link FailurePolicy} wakes the others (they may be blocked in a
 * collective that will never complete), work that has not started yet is skipped, the step waits
 * for the rest (up to the policy's grace) and throws the policy's account of the failure. A rank
 * still running when the step gave up leaves the group {@link #stuck()}: closing it then interrupts
 * its own threads instead of waiting for them. An interrupt of the waiting caller and {@link
 * #close} during a step fail the step the same way, from outside the ranks (rank -1).
 *
 * <p>Steps run one at a time (a second caller waits for the first). The group owns the workers
 * given to it; workers over threads someone else owns ({@link RankWorker#borrowed}) are left
 * running.
 */
public final class RankGroup implements AutoCloseable {
  private final List<RankWorker> workers;
  private final FailurePolicy policy;
  private final ReentrantLock stepLock = new ReentrantLock();
  private volatile StepJoin running;
  private volatile boolean closed;
  private volatile boolean stuck;

  /**
   * A group of {@code workers.size()} ranks, rank {@code i} running on {@code workers.get(i)}.
   *
   * @throws IllegalArgumentException when there are no workers
   */
  public RankGroup(List<? extends RankWorker> workers, FailurePolicy policy) {
    if (workers.isEmpty()) {
      throw new IllegalArgumentException("a rank group needs at least one rank");
    }
    this.workers = List.copyOf(workers);
    this.policy = java.util.Objects.requireNonNull(policy);
  }

  /** Ranks in the group. */
  public int size() {
    return workers.size();
  }

  /**
   * Whether a failed step gave up on a rank that was still running (for example blocked in a
   * collective nothing can wake).
   */
  public boolean stuck() {
    return stuck;
  }

  /**
   * Runs {@code work} on every rank at once and returns rank 0's result.
   *
   * @throws RuntimeException the policy's report when a rank failed ({@link FailurePolicy#report})
   * @throws IllegalStateException when the group is closed
   */
  @SuppressWarnings("unchecked")
  public <T> T step(RankWork<T> work) {
    stepLock.lock();
    try {
      return (T) join(work).result(0);
    } finally {
      stepLock.unlock();
    }
  }

  /** As {@link #step}, returning every rank's result by index (loading, setting up ranks). */
  @SuppressWarnings("unchecked")
  public <T> List<T> all(RankWork<T> work) {
    stepLock.lock();
    try {
      return (List<T>) Collections.unmodifiableList(Arrays.asList(join(work).results()));
    } finally {
      stepLock.unlock();
    }
  }

  private StepJoin join(RankWork<?> work) {
    if (closed) {
      throw new IllegalStateException("the rank group is closed");
    }
    StepJoin join = new StepJoin(workers.size(), policy);
    running = join;
    try {
      for (int r = 0; r < workers.size(); r++) {
        int rank = r;
        try {
          workers.get(r).execute(() -> join.runOn(rank, work));
        } catch (RejectedExecutionException e) {
          join.fail(rank, e);
        }
      }
      join.await(policy.grace());
    } finally {
      running = null;
    }
    StepFailure f = join.failure();
    if (f != null) {
      if (!f.unfinishedRanks().isEmpty()) {
        stuck = true;
      }
      throw policy.report(f);
    }
    return join;
  }

  /**
   * A step of ranks that each hold one shard of every sequence's cache: reserves room for the
   * step's tokens in every cache first (so a full block allocator fails here, before any rank has
   * started: one rank failing alone would leave the others waiting in a collective), runs {@code
   * work} on every rank with its shards, then sets each cache's length from its first shard's.
   */
  public <T> T stepOnShards(BatchLayout layout, KvCache[] caches, ShardWork<T> work) {
    for (int s = 0; s < layout.numSeqs(); s++) {
      int end = layout.seqStart()[s + 1];
      if (end > layout.seqStart()[s]) {
        caches[s].ensureCapacity(layout.positions()[end - 1] + 1);
      }
    }
    T out = step(r -> work.run(r, shardsOf(caches, r)));
    for (int s = 0; s < layout.numSeqs(); s++) {
      caches[s].setLength(caches[s].shard(0).length());
    }
    return out;
  }

  private static KvCache[] shardsOf(KvCache[] caches, int r) {
    KvCache[] mine = new KvCache[caches.length];
    for (int s = 0; s < mine.length; s++) {
      mine[s] = caches[s].shard(r);
    }
    return mine;
  }

  /**
   * One sequence's cache with a shard per rank, made by {@code perRank} (on the caller's thread);
   * when one rank cannot make its shard, the shards made so far are closed.
   */
  public KvCache newShardedCache(IntFunction<KvCache> perRank) {
    return KvCache.ofShards(makeShards(perRank));
  }

  /**
   * Like {@link #newShardedCache(IntFunction)}, with {@code blocks} as the block table of every
   * shard (the cache owns it; the shards take no ids of their own), so all ranks use the same block
   * ids and the allocator counts each block once.
   */
  public KvCache newShardedCache(
      IntFunction<KvCache> perRank, dev.ringmaster.runtime.KvBlockTable blocks) {
    KvCache[] shards;
    try {
      shards = makeShards(perRank);
    } catch (RuntimeException | Error e) {
      blocks.close();
      throw e;
    }
    return KvCache.ofShards(shards, blocks);
  }

  private KvCache[] makeShards(IntFunction<KvCache> perRank) {
    KvCache[] shards = new KvCache[workers.size()];
    try {
      for (int r = 0; r < shards.length; r++) {
        shards[r] = perRank.apply(r);
      }
    } catch (RuntimeException | Error e) {
      for (KvCache c : shards) {
        if (c != null) {
          c.close();
        }
      }
      throw e;
    }
    return shards;
  }

  /**
   * Closes the group: a step still running is failed from outside (the policy wakes its ranks) and
   * waited for, later steps throw, and the group's own workers stop (interrupted when a rank is
   * stuck). Idempotent.
   */
  @Override
  public void close() {
    closed = true;
    StepJoin j = running;
    if (j != null) {
      j.fail(-1, new IllegalStateException("the rank group was closed while a step ran"));
    }
    stepLock.lock();
    try {
      for (RankWorker w : workers) {
        w.close(stuck);
      }
    } finally {
      stepLock.unlock();
    }
  }
}
