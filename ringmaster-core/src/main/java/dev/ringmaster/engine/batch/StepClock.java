package dev.ringmaster.engine.batch;

/**
 * Accumulates {@link StepTimes} on the engine thread; {@link #snapshot} may be read from any
 * thread.
 */
final class StepClock {
  /** Steps the recent means cover. */
  static final int WINDOW = 64;

  private final long[] host = new long[WINDOW];
  private final long[] build = new long[WINDOW];
  private final long[] forward = new long[WINDOW];
  private long steps;
  private long overlapped;
  private long hostTotal;
  private long buildTotal;
  private long forwardTotal;
  private long pendingBuild;
  private volatile StepTimes snapshot = new StepTimes(0, 0, 0, 0, 0, 0, 0, 0);

  /** Batch-building time that goes to the next recorded step. */
  void built(long nanos) {
    pendingBuild += nanos;
  }

  /**
   * Records one step.
   *
   * @param hostNanos engine time between the previous step's tokens and this step's submission
   * @param forwardNanos time from this step's submission to its tokens
   * @param planAhead whether its batch was planned while the previous step ran
   */
  void step(long hostNanos, long forwardNanos, boolean planAhead) {
    int slot = (int) (steps % WINDOW);
    host[slot] = hostNanos;
    build[slot] = pendingBuild;
    forward[slot] = forwardNanos;
    steps++;
    overlapped += planAhead ? 1 : 0;
    hostTotal += hostNanos;
    buildTotal += pendingBuild;
    forwardTotal += forwardNanos;
    pendingBuild = 0;
    int n = (int) Math.min(steps, WINDOW);
    snapshot =
        new StepTimes(
            steps,
            overlapped,
            hostTotal / 1e9,
            buildTotal / 1e9,
            forwardTotal / 1e9,
            mean(host, n),
            mean(build, n),
            mean(forward, n));
  }

  private static double mean(long[] v, int n) {
    long sum = 0;
    for (int i = 0; i < n; i++) {
      sum += v[i];
    }
    return sum / 1e6 / n;
  }

  StepTimes snapshot() {
    return snapshot;
  }
}
