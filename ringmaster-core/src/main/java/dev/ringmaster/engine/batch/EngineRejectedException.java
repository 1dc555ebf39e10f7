package dev.ringmaster.engine.batch;

/** The engine refused a request at submission; nothing was queued. */
public final class EngineRejectedException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** Why. */
  public enum Reason {
    /** The waiting queue is full: retry later. */
    QUEUE_FULL,
    /** The engine is shutting down or stopped. */
    SHUTTING_DOWN,
    /** The request can never run: invalid tokens or more KV/context than exists. */
    INVALID
  }

  private final Reason reason;

  /** A rejection. */
  public EngineRejectedException(Reason reason, String message) {
    super(message);
    this.reason = reason;
  }

  /** Why the request was refused. */
  public Reason reason() {
    return reason;
  }
}
