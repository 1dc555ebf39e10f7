package dev.ringmaster.server.generation;

/**
 * Receives per-request timings (metrics). Called on the request's thread as it reads its tokens,
 * and on the engine thread for the end of a request nobody reads any more: must be quick and
 * thread-safe.
 */
public interface LatencyObserver {
  /** Seconds from submission to the first token. */
  void firstToken(double seconds);

  /** Seconds between two consecutive tokens of one request. */
  void interToken(double seconds);

  /** A request ended. */
  void finished(ChoiceEvent.Done done);

  /**
   * Seconds from the HTTP request's arrival to its submission to the engine: reading and parsing
   * the body, tokenizing, applying the chat template.
   */
  default void requestProcessed(double seconds) {}

  /**
   * The engine's part of one choice's time to first token.
   *
   * @param waitSeconds from submission to the first step with its prompt going to the model
   * @param forwardSeconds from there to its first token on the host
   * @param steps forward steps its prefill took
   */
  default void prefilled(double waitSeconds, double forwardSeconds, int steps) {}

  /**
   * Seconds from a choice's first token on the host to the first response chunk that carries it.
   */
  default void firstTokenEmitted(double seconds) {}

  /** An observer that records nothing. */
  LatencyObserver NONE =
      new LatencyObserver() {
        @Override
        public void firstToken(double seconds) {}

        @Override
        public void interToken(double seconds) {}

        @Override
        public void finished(ChoiceEvent.Done done) {}
      };
}
