package dev.ringmaster.parallel;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * One rank's side of the flag protocol: raising its own progress, waiting for peers' progress, and
 * the staging-buffer discipline.
 *
 * <p>Every rank raises its progress the same number of times in every collective (that number
 * depends only on the operation, sizes and world size), so at a collective's start all ranks'
 * counters share one base value B and "peer reached B + k" means "peer finished step k of this
 * collective". A staged collective (one whose peers read this rank's staging buffer) first raises
 * progress to B + 1 after filling the buffer; peers read the buffer only after seeing that, and
 * finish reading before they raise progress in their next staged collective. Staged collectives
 * alternate between two buffers, so before reusing a buffer a rank only has to see every peer's
 * first raise of the previous staged collective ({@link #beginStaged}): usually already true,
 * making a one-shot allreduce a single synchronisation.
 */
final class RankSync {
  final int rank;
  final int worldSize;
  final Peer self;
  final Peer[] peers;
  private final LocalWorld world;
  private final long timeoutNanos;
  private final int spins;
  private final long yieldNanos;
  private CollectiveOp op = CollectiveOp.BARRIER;
  private long stagedCalls;
  private long previousStagedBase;

  RankSync(LocalWorld world, Peer[] peers, int rank, LocalWorldConfig config) {
    this.world = world;
    this.peers = peers;
    this.rank = rank;
    this.worldSize = peers.length;
    this.self = peers[rank];
    this.timeoutNanos = config.timeout().toNanos();
    this.spins = config.spinIterations();
    this.yieldNanos = config.yieldNanos();
  }

  /** Marks the start of a collective: names it for error messages and fails fast if aborted. */
  void begin(CollectiveOp collective) {
    this.op = collective;
    world.throwIfAborted(rank, collective);
  }

  /** This rank's progress (the base of the collective about to run, between collectives). */
  long progress() {
    return self.progress;
  }

  /** Raises this rank's progress to {@code value}. */
  void signal(long value) {
    self.publish(value);
  }

  /**
   * Starts a staged collective: waits until no peer can still read the buffer about to be reused
   * and returns its parity (0 or 1).
   */
  int beginStaged() {
    long base = self.progress;
    if (stagedCalls > 0) {
      awaitAll(previousStagedBase + 1);
    }
    previousStagedBase = base;
    return (int) (stagedCalls++ & 1);
  }

  /** This rank's staging buffer of the given parity, grown to at least {@code minLength}. */
  float[] stage(int parity, int minLength) {
    float[] s = self.stage[parity];
    if (s == null || s.length < minLength) {
      int grown = s == null ? 0 : s.length + (s.length >> 1);
      s = new float[Math.max(minLength, grown)];
      self.stage[parity] = s;
    }
    return s;
  }

  /** Waits until every other rank's progress is at least {@code target}. */
  void awaitAll(long target) {
    for (int i = 1; i < worldSize; i++) {
      await((rank + i) % worldSize, target);
    }
  }

  /**
   * Waits until rank {@code peer}'s progress is at least {@code target}: spins briefly (ranks with
   * a core each) or yields briefly (ranks sharing cores), then parks. Fails with {@link
   * CollectiveException} when the world was aborted, the thread interrupted, or the timeout passed
   * (then it aborts the world, so the other ranks fail too instead of waiting).
   */
  void await(int peer, long target) {
    Peer p = peers[peer];
    if (p.progress >= target) {
      return;
    }
    for (int i = 0; i < spins; i++) {
      Thread.onSpinWait();
      if (p.progress >= target) {
        return;
      }
    }
    if (yieldNanos > 0) {
      long until = System.nanoTime() + yieldNanos;
      do {
        Thread.yield();
        if (p.progress >= target) {
          return;
        }
      } while (System.nanoTime() < until);
    }
    Thread me = Thread.currentThread();
    p.waiters.set(rank, me);
    try {
      long deadline = System.nanoTime() + timeoutNanos;
      while (p.progress < target) {
        world.throwIfAborted(rank, op);
        if (me.isInterrupted()) {
          throw fail(new CollectiveException("rank " + rank + ": interrupted during " + op));
        }
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          throw fail(
              new CollectiveException(
                  String.format(
                      "rank %d: timed out after %d ms in %s waiting for rank %d"
                          + " (its progress %d, needed %d); did a rank fail or skip a collective?",
                      rank,
                      TimeUnit.NANOSECONDS.toMillis(timeoutNanos),
                      op,
                      peer,
                      p.progress,
                      target)));
        }
        LockSupport.parkNanos(this, left);
      }
    } finally {
      p.waiters.set(rank, null);
    }
  }

  /** Aborts the world with {@code e} (so peers stop waiting) and returns it for throwing. */
  <E extends RuntimeException> E fail(E e) {
    world.abort(rank, e);
    return e;
  }
}
