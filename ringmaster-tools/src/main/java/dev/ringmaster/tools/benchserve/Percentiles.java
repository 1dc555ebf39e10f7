package dev.ringmaster.tools.benchserve;

import java.util.Arrays;

/**
 * Summary statistics as numpy computes them for sglang.bench_serving: the mean, the population
 * standard deviation, and percentiles interpolated linearly between the closest ranks. An empty
 * sample gives 0 for each, as numpy does for sglang's {@code values or 0}.
 */
public final class Percentiles {
  private final double[] sorted;

  /** Statistics of {@code values} (copied). */
  public Percentiles(double[] values) {
    this.sorted = values.clone();
    Arrays.sort(sorted);
  }

  /** The arithmetic mean. */
  public double mean() {
    if (sorted.length == 0) {
      return 0;
    }
    double s = 0;
    for (double v : sorted) {
      s += v;
    }
    return s / sorted.length;
  }

  /** The population standard deviation (numpy's default, {@code ddof = 0}). */
  public double std() {
    if (sorted.length == 0) {
      return 0;
    }
    double m = mean();
    double s = 0;
    for (double v : sorted) {
      s += (v - m) * (v - m);
    }
    return Math.sqrt(s / sorted.length);
  }

  /** The median: the 50th percentile. */
  public double median() {
    return percentile(50);
  }

  /**
   * The {@code p}-th percentile: rank p / 100 x (n - 1) in the sorted sample, interpolated linearly
   * between the neighbouring values.
   */
  public double percentile(double p) {
    if (p < 0 || p > 100) {
      throw new IllegalArgumentException("percentile " + p + " is not in [0, 100]");
    }
    if (sorted.length == 0) {
      return 0;
    }
    double rank = p / 100 * (sorted.length - 1);
    int lo = (int) Math.floor(rank);
    int hi = Math.min(lo + 1, sorted.length - 1);
    return sorted[lo] + (rank - lo) * (sorted[hi] - sorted[lo]);
  }

  /** The largest value. */
  public double max() {
    return sorted.length == 0 ? 0 : sorted[sorted.length - 1];
  }

  /** How many values. */
  public int count() {
    return sorted.length;
  }
}
