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
