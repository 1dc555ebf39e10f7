package dev.ringmaster.server.metrics;

import java.util.ArrayDeque;

/**
 * Output tokens per second over the most recent generation: tokens produced in the last {@link
 * #WINDOW_NANOS}, divided by the time from the first of them to the last (at least one second). It
 * keeps its value while the server is idle, as SGLang's {@code last_gen_throughput} does.
 */
public final class GenerationThroughput {
  static final long WINDOW_NANOS = 10_000_000_000L;
  private static final long MIN_SPAN_NANOS = 1_000_000_000L;
  private final ArrayDeque<long[]> buckets =
      new ArrayDeque<>(); // {start nanos, tokens, last nanos}

  /** Records one output token produced at {@code nanos} ({@link System#nanoTime}). */
  public synchronized void token(long nanos) {
    long[] last = buckets.peekLast();
    if (last != null && nanos - last[0] < 100_000_000L) {
      last[1]++;
      last[2] = nanos;
    } else {
      buckets.addLast(new long[] {nanos, 1, nanos});
    }
    while (!buckets.isEmpty() && nanos - buckets.peekFirst()[2] > WINDOW_NANOS) {
      buckets.pollFirst();
    }
  }

  /** Tokens per second over the recent window; 0 before any token. */
  public synchronized double tokensPerSecond() {
    if (buckets.isEmpty()) {
      return 0;
    }
    long tokens = 0;
    for (long[] b : buckets) {
      tokens += b[1];
    }
    long span = Math.max(MIN_SPAN_NANOS, buckets.peekLast()[2] - buckets.peekFirst()[0]);
    return tokens * 1e9 / span;
  }
}
