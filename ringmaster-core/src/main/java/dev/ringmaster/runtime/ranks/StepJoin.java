package dev.ringmaster.runtime.ranks;

import java.time.Duration;
import java.util.concurrent.CancellationException;

/**
 * One step's meeting point: each rank reports its result or failure here, the caller waits here.
 * The first failure calls the policy's abort once, from the thread that saw it.
 */
final class StepJoin {
  private final FailurePolicy policy;
  private final Object[] results;
  private final Throwable[] errors;
  private final boolean[] done;
  private int remaining;
  private int firstRank;
  private volatile Throwable first;

  StepJoin(int ranks, FailurePolicy policy) {
    this.policy = policy;
    this.results = new Object[ranks];
    this.errors = new Throwable[ranks];
    this.done = new boolean[ranks];
    this.remaining = ranks;
  }

  /** Runs rank {@code rank}'s work, unless another rank has failed already. */
  <T> void runOn(int rank, RankWork<T> work) {
    if (first != null) {
      fail(
          rank,
          new CancellationException(
              "rank " + rank + " skipped its part of the step: " + who() + " failed first"));
      return;
    }
    Object out;
    try {
      out = work.run(rank);
    } catch (Throwable t) {
      fail(rank, t);
      return;
    }
    synchronized (this) {
      results[rank] = out;
      finished(rank);
    }
  }

  private synchronized String who() {
    return firstRank < 0 ? "the caller" : "rank " + firstRank;
  }

  /**
   * Records a failure of rank {@code rank} (-1: from outside the ranks); the first one aborts the
   * others through the policy.
   */
  void fail(int rank, Throwable t) {
    boolean isFirst;
    synchronized (this) {
      if (rank >= 0) {
        if (done[rank]) {
          return;
        }
        errors[rank] = t;
        finished(rank);
      }
      isFirst = first == null;
      if (isFirst) {
        firstRank = rank;
        first = t;
        notifyAll();
      }
    }
    if (isFirst) {
      try {
        policy.abort(rank, t);
      } catch (RuntimeException | Error e) {
        t.addSuppressed(e);
      }
    }
  }

  private void finished(int rank) {
    done[rank] = true;
    if (--remaining == 0) {
      notifyAll();
    }
  }

  /**
   * Waits until every rank has finished or one has failed, then, after a failure, up to {@code
   * grace} (null: without limit) for the rest. An interrupt fails the step from outside (aborting
   * the ranks) and is restored when the wait ends; a second one stops the wait.
   */
  void await(Duration grace) {
    boolean interrupted = false;
    synchronized (this) {
      while (remaining > 0 && first == null) {
        try {
          wait();
        } catch (InterruptedException e) {
          interrupted = true;
          break;
        }
      }
    }
    if (interrupted) {
      fail(-1, new InterruptedException("interrupted while waiting for the ranks' step"));
    }
    long deadline = grace == null ? Long.MAX_VALUE : System.nanoTime() + grace.toNanos();
    synchronized (this) {
      while (remaining > 0) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          break;
        }
        try {
          if (grace == null) {
            wait();
          } else {
            wait(Math.max(1, left / 1_000_000));
          }
        } catch (InterruptedException e) {
          if (interrupted) {
            break;
          }
          interrupted = true;
          fail(-1, new InterruptedException("interrupted while waiting for the ranks' step"));
        }
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  /** The step's failure, or null when every rank returned. Call after {@link #await}. */
  synchronized StepFailure failure() {
    if (first == null) {
      return null;
    }
    boolean[] unfinished = new boolean[done.length];
    for (int r = 0; r < done.length; r++) {
      unfinished[r] = !done[r];
    }
    return new StepFailure(firstRank, first, errors.clone(), unfinished);
  }

  /** Rank {@code r}'s result. Call after {@link #await} found no failure. */
  synchronized Object result(int r) {
    return results[r];
  }

  /** Every rank's result, by index. Call after {@link #await} found no failure. */
  synchronized Object[] results() {
    return results.clone();
  }
}
