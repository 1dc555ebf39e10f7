package dev.ringmaster.engine.batch;

import java.util.concurrent.atomic.AtomicBoolean;

/** A submitted request, as seen by its caller: cancel it at any time from any thread. */
public final class RequestHandle {
  private final String id;
  private final AtomicBoolean cancelled = new AtomicBoolean();
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

  /** Whether {@link #cancel} was called. */
  public boolean isCancelled() {
    return cancelled.get();
  }
}
