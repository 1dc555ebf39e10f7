package dev.ringmaster.runtime.ranks;

import java.util.ArrayList;
import java.util.List;

/**
 * How a step of a {@link RankGroup} failed.
 *
 * @param firstRank the rank that failed first, or -1 when the first cause came from outside the
 *     ranks (the caller was interrupted, the group was closed)
 * @param first the first failure
 * @param errors each rank's failure by index, null where the rank finished or is still running
 * @param unfinished each rank by index: true where it had not finished when the step gave up
 *     waiting ({@link FailurePolicy#grace})
 */
public record StepFailure(
    int firstRank, Throwable first, Throwable[] errors, boolean[] unfinished) {
  /** The ranks still running when the step gave up on them, in index order. */
  public List<Integer> unfinishedRanks() {
    List<Integer> out = new ArrayList<>();
    for (int r = 0; r < unfinished.length; r++) {
      if (unfinished[r]) {
        out.add(r);
      }
    }
    return out;
  }

  /** Whether rank {@code r} was still running when the step gave up on it. */
  public boolean unfinished(int r) {
    return unfinished[r];
  }

  /**
   * The first failure as a runtime exception (an unchecked one as it is, anything else wrapped in
   * {@link IllegalStateException}), every other rank's failure suppressed into it.
   */
  public RuntimeException firstWithOthersSuppressed() {
    RuntimeException e =
        first instanceof RuntimeException r
            ? r
            : new IllegalStateException(
                (firstRank < 0 ? "rank group" : "rank " + firstRank) + " failed: " + first, first);
    for (Throwable t : errors) {
      if (t != null && t != first) {
        e.addSuppressed(t);
      }
    }
    return e;
  }
}
