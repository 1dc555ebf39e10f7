package dev.ringmaster.tools.benchserve;

/** A benchmark that cannot run as asked: bad flags, an unreadable dataset, a server not there. */
public final class BenchServeException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** An error whose message says what is wrong and what to do. */
  public BenchServeException(String message) {
    super(message);
  }

  /** As above, keeping the cause. */
  public BenchServeException(String message, Throwable cause) {
    super(message, cause);
  }
}
