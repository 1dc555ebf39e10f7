package dev.ringmaster.tools.tune;

import java.util.List;

/** The median and the spread of a trial's repeats; ranks and their correlation. */
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

  /** The rank of each value from 1 (smallest first), ties given the mean of their ranks. */
  static double[] ranks(List<Double> v) {
    double[] out = new double[v.size()];
    for (int i = 0; i < v.size(); i++) {
      int below = 0;
      int equal = 0;
      for (double x : v) {
        if (x < v.get(i)) {
          below++;
        } else if (x == v.get(i)) {
          equal++;
        }
      }
      out[i] = below + (equal + 1) / 2.0;
    }
    return out;
  }

  /** Pearson's correlation of two equally long series; 0 when either is constant. */
  static double pearson(double[] a, double[] b) {
    double ma = java.util.Arrays.stream(a).average().orElseThrow();
    double mb = java.util.Arrays.stream(b).average().orElseThrow();
    double sab = 0;
    double saa = 0;
    double sbb = 0;
    for (int i = 0; i < a.length; i++) {
      sab += (a[i] - ma) * (b[i] - mb);
      saa += (a[i] - ma) * (a[i] - ma);
      sbb += (b[i] - mb) * (b[i] - mb);
    }
    return saa == 0 || sbb == 0 ? 0 : sab / Math.sqrt(saa * sbb);
  }
}
