package dev.ringmaster.tools.benchserve;

import java.util.Random;

/**
 * Gaps between request arrivals: exponential with mean 1 / rate (a Poisson process), as
 * sglang.bench_serving draws them; an infinite rate sends every request at once.
 */
public final class PoissonArrivals {
  private final double rate;
  private final Random random;

  /**
   * Arrivals at {@code rate} requests per second, reproducible from {@code seed}.
   *
   * @param rate requests per second, positive; {@link Double#POSITIVE_INFINITY} for no gaps
   */
  public PoissonArrivals(double rate, long seed) {
    if (!(rate > 0)) {
      throw new IllegalArgumentException("request rate " + rate + " must be positive");
    }
    this.rate = rate;
    this.random = new Random(seed);
  }

  /** Seconds to wait before the next request. */
  public double nextGapSeconds() {
    if (Double.isInfinite(rate)) {
      return 0;
    }
    // 1 - U is in (0, 1]: the logarithm stays finite.
    return -Math.log(1 - random.nextDouble()) / rate;
  }
}
