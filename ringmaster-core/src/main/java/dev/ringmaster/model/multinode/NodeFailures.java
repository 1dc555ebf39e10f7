package dev.ringmaster.model.multinode;

import java.io.IOException;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/** How the nodes describe failures to each other and decide which one is the real cause. */
final class NodeFailures {
  private NodeFailures() {}

  /** {@code e} without the wrappers of futures. */
  static Throwable unwrap(Throwable e) {
    while ((e instanceof CompletionException || e instanceof ExecutionException)
        && e.getCause() != null) {
      e = e.getCause();
    }
    return e;
  }

  /**
   * Whether a failure only reports a collective that broke because some rank failed or vanished, or
   * a part of the step that was skipped because another failed first (so another node holds the
   * real cause).
   */
  static boolean isConsequence(Throwable t) {
    Throwable root = root(t);
    return root instanceof IOException
        || root instanceof dev.ringmaster.parallel.CollectiveException
        || root instanceof NodeFailureException
        || root instanceof java.util.concurrent.CancellationException;
  }

  /** A one-line account of a failure: its message, and the root cause's when that differs. */
  static String describe(Throwable t) {
    Throwable root = root(t);
    String top =
        t instanceof IOException io
            ? ControlChannel.reason(io)
            : t.getMessage() != null ? t.getMessage() : t.toString();
    if (root == t || top.contains(String.valueOf(root.getMessage()))) {
      return top;
    }
    return top + " (" + root + ")";
  }

  private static Throwable root(Throwable t) {
    Throwable root = t;
    while (root.getCause() != null && root.getCause() != root) {
      root = root.getCause();
    }
    return root;
  }
}
