package dev.ringmaster.tools.tune;

import java.util.List;

/** The median and the spread of a trial's repeats. */
final class Stats {
  private Stats() {}

  /** The median (the mean of the middle two for an even count). */
  static double median(List<Double> v) {
    double[] s = v.stream().mapToDouble(Double::doubleValue).sorted().toArray();
    if (s.length == 0) {
      throw new IllegalArgumentException("the median of no values");
    }
    int mid = s.length / 2;
    return s.length % 2 == 1 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
  }

  /** The largest minus the smallest value: 0 for one value. */
  static double range(List<Double> v) {
    double min = v.stream().mapToDouble(Double::doubleValue).min().orElseThrow();
    double max = v.stream().mapToDouble(Double::doubleValue).max().orElseThrow();
    return max - min;
  }
}
