package dev.ringmaster.parallel;

import java.util.ArrayList;
import java.util.List;

/**
 * The first failure of a world of ranks: the rank that failed (-1 when the world was aborted from
 * outside any rank) and why. Later failures are mostly its consequences (peers woken by the abort).
 *
 * @param rank the failing rank, or -1
 * @param cause what it threw
 */
public record WorldFailure(int rank, Throwable cause) {
  /**
   * The exception a call over the ranks throws for this failure: a {@link CollectiveException}
   * naming this rank and cause, with the ranks' other exceptions ({@code errors}, null where a rank
   * did not throw) suppressed into it.
   */
  public CollectiveException exception(Throwable[] errors) {
    String who = rank < 0 ? "the world was aborted" : "rank " + rank + " failed";
    CollectiveException e = new CollectiveException(who + ": " + cause, cause);
    for (Throwable t : errors) {
      if (t != null && t != cause) {
        e.addSuppressed(t);
      }
    }
    return e;
  }

  /**
   * The ranks' results by position once all have returned: the list when none threw, else a {@link
   * CollectiveException} naming {@code root} with the other ranks' exceptions suppressed into it.
   *
   * @param results each rank's result (null where it threw)
   * @param errors each rank's exception, or null
   * @param root the world's first failure (required when any rank threw)
   */
  public static <T> List<T> resultsOrThrow(
      Object[] results, Throwable[] errors, WorldFailure root) {
    boolean failed = false;
    for (Throwable t : errors) {
      failed |= t != null;
    }
    if (failed) {
      throw root.exception(errors);
    }
    List<T> out = new ArrayList<>(results.length);
    for (Object o : results) {
      @SuppressWarnings("unchecked")
      T t = (T) o;
      out.add(t);
    }
    return out;
  }
}
