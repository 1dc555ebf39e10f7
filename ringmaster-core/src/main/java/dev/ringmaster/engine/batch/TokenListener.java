package dev.ringmaster.engine.batch;

/**
 * Receives a request's tokens. Called on the engine thread: implementations must be quick and must
 * not block (hand work to another thread through a queue). An exception thrown here fails only this
 * request.
 */
public interface TokenListener {
  /**
   * A new token.
   *
   * @return true to continue, false to stop now with {@link FinishReason#STOP} (a stop string
   *     matched)
   */
  boolean onToken(TokenEvent event);

  /**
   * Called once, on the engine thread just before the first {@link #onToken}: when the request's
   * prefill ran (for latency metrics). Must be quick, as {@link #onToken}.
   */
  default void onPrefilled(PrefillTimes times) {}

  /** The request ended; called exactly once, after the last {@link #onToken}. */
  void onFinish(RequestOutcome outcome);
}
