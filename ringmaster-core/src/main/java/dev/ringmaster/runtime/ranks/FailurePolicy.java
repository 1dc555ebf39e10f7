package dev.ringmaster.runtime.ranks;

import java.time.Duration;

/**
 * What a {@link RankGroup} does when a rank fails a step: how it wakes the other ranks (which may
 * be blocked in a collective waiting for the failed one), how long it waits for them, and which
 * exception the step throws.
 */
public interface FailurePolicy {
  /**
   * Wakes the ranks still running a step after {@code rank} failed with {@code cause} (for example
   * by aborting the collectives' world). Called at most once per step, on the thread that saw the
   * first failure; it must not block for long.
   *
   * @param rank the failed rank's index in the group, or -1 for a cause outside the ranks (the
   *     caller was interrupted, the group was closed)
   */
  void abort(int rank, Throwable cause);

  /**
   * How long a failed step waits for the other ranks to finish before it reports; null waits for
   * every rank. A rank still running after the grace is reported as unfinished ({@link
   * StepFailure#unfinished}).
   */
  default Duration grace() {
    return null;
  }

  /** The exception the failed step throws. */
  default RuntimeException report(StepFailure failure) {
    return failure.firstWithOthersSuppressed();
  }

  /**
   * Nothing can wake a rank (NCCL collectives): a failed step waits for every rank and rethrows the
   * first failure with the others suppressed.
   */
  static FailurePolicy waitForAll() {
    return (rank, cause) -> {};
  }
}
