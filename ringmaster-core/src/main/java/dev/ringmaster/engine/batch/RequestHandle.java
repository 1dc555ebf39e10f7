package dev.ringmaster.engine.batch;

import java.util.concurrent.atomic.AtomicBoolean;

/** A submitted request, as seen by its caller: cancel it at any time from any thread. */
public final class RequestHandle {
  private final String id;
  private final AtomicBoolean cancelled = new AtomicBoolean();
  private final AtomicBoolean stopped = new AtomicBoolean();
  private final Runnable wake;

  RequestHandle(String id, Runnable wake) {
    this.id = id;
    this.wake = wake;
  }

  /** The request's id. */
  public String id() {
    return id;
  }

  /**
   * Asks the engine to stop this request. It leaves the batch at the next step boundary, its KV
   * blocks return to the pool, and its listener gets {@link FinishReason#ABORT} (unless it already
   * finished). Idempotent.
   */
  public void cancel() {
    if (cancelled.compareAndSet(false, true)) {
      wake.run();
    }
  }

  /**
   * Asks the engine to end this request as complete: it leaves the batch at the next step boundary
   * with {@link FinishReason#STOP} (unless it already finished). For a caller that finds a stop
   * string in the text it decodes on its own thread; tokens generated after the match and before
   * the boundary still reach the listener, for the caller to drop. Idempotent.
   */
  public void stop() {
    if (stopped.compareAndSet(false, true)) {
      wake.run();
    }
  }

  /** Whether {@link #stop} was called. */
  public boolean isStopRequested() {
    return stopped.get();
  }

  /** Whether the request should leave the batch: cancelled or stopped. */
  boolean endRequested() {
    return cancelled.get() || stopped.get();
  }

  /** Whether {@link #cancel} was called. */
  public boolean isCancelled() {
    return cancelled.get();
  }
}
