package dev.ringmaster.cuda.model;

/** Closing a model's device resources in order. */
final class Resources {
  private Resources() {}

  /** Closes every resource (nulls skipped), all of them even when one fails; rethrows the first. */
  static void closeAll(AutoCloseable... resources) {
    RuntimeException first = null;
    for (AutoCloseable r : resources) {
      if (r == null) {
        continue;
      }
      try {
        r.close();
      } catch (Exception e) {
        if (first == null) {
          first = new IllegalStateException("closing the GPU model failed", e);
        } else {
          first.addSuppressed(e);
        }
      }
    }
    if (first != null) {
      throw first;
    }
  }
}
