package dev.ringmaster.sim.calibrate;

import dev.ringmaster.sim.calibrate.Measurements.CollectiveSample;
import dev.ringmaster.sim.hw.HostCollectives;
import dev.ringmaster.sim.hw.HostLine;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Fits {@link HostCollectives} to in-process CPU allreduce samples, per algorithm and rank count
 * with at least two message sizes. For each candidate knee (every measured size, and none) the
 * line's constants come from least squares on relative error (sizes span five orders of magnitude;
 * absolute error would leave the small ones to chance); the knee kept is the one whose largest
 * relative error is smallest, since accuracy is judged point by point. A knee is what one-shot on
 * more ranks than cores shows: past a few hundred KiB its working set leaves the caches and the
 * slope triples. Pairs without samples keep the base profile's constants.
 */
final class HostFit {
  private HostFit() {}

  static HostCollectives fit(
      HostCollectives base, List<CollectiveSample> samples, List<String> lines) {
    Map<String, List<CollectiveSample>> groups = new LinkedHashMap<>();
    for (CollectiveSample c : samples) {
      if (c.op().equals("allreduce")) {
        groups
            .computeIfAbsent(HostCollectives.key(c.algorithm(), c.ranks()), k -> new ArrayList<>())
            .add(c);
      }
    }
    Map<String, HostLine> out = new LinkedHashMap<>(base.allreduce());
    int fitted = 0;
    for (Map.Entry<String, List<CollectiveSample>> e : groups.entrySet()) {
      List<CollectiveSample> s = e.getValue();
      if (s.stream().mapToDouble(CollectiveSample::bytes).distinct().count() < 2) {
        continue;
      }
      HostLine best = null;
      double bestErr = Double.POSITIVE_INFINITY;
      List<Double> knees = new ArrayList<>();
      knees.add(0.0); // no knee: one line
      // inner sizes only: a knee at either end would stand in for the fixed cost or the last slope
      double[] sizes =
          s.stream().mapToDouble(CollectiveSample::bytes).distinct().sorted().toArray();
      for (int i = 2; i < sizes.length - 1; i++) {
        knees.add(sizes[i]);
      }
      for (double knee : knees) {
        HostLine line = line(s, knee);
        if (line == null) {
          continue;
        }
        double err = maxErrorPct(line, s);
        if (err < bestErr) {
          best = line;
          bestErr = err;
        }
      }
      if (best == null) {
        continue;
      }
      out.put(e.getKey(), best);
      fitted++;
      lines.add(
          String.format(
              "host %s: base %.2f us, %.3f GB/s%s (%d samples, max error %.1f%%)",
              e.getKey(),
              best.baseUs(),
              best.cachedBandwidth() / 1e9,
              best.kneeBytes() == 0
                  ? ""
                  : String.format(
                      ", beyond %.0f KiB %.3f GB/s",
                      best.kneeBytes() / 1024, best.memoryBandwidth() / 1e9),
              s.size(),
              bestErr));
    }
    if (fitted == 0) {
      return base;
    }
    return new HostCollectives(
        out,
        "fitted by simulate calibrate to bench collectives --device cpu: per algorithm and rank"
            + " count, a fixed cost plus bytes at a cached bandwidth up to a knee and a memory"
            + " bandwidth beyond it");
  }

  /**
   * Least-squares line with a knee at {@code knee} bytes (0: no knee), or null when a fitted rate
   * comes out non-positive or, with a knee, the fixed cost negative.
   */
  private static HostLine line(List<CollectiveSample> s, double knee) {
    boolean kneed = knee > 0;
    double[][] x = new double[s.size()][];
    double[] y = new double[s.size()];
    for (int i = 0; i < s.size(); i++) {
      CollectiveSample c = s.get(i);
      double w = 1 / c.timeUs();
      // MB keep the system well scaled
      double cached = Math.min(c.bytes(), knee) / 1e6;
      double beyond = Math.max(0, c.bytes() - knee) / 1e6;
      x[i] = kneed ? new double[] {w, cached * w, beyond * w} : new double[] {w, beyond * w};
      y[i] = 1;
    }
    double[] b;
    try {
      b = LeastSquares.solve(x, y);
    } catch (IllegalArgumentException singular) {
      return null; // e.g. a knee at the largest size: nothing beyond it
    }
    if (!kneed && b[0] < 0) {
      // no fixed cost to be seen: a line through the origin
      double[] xs = new double[s.size()];
      double[] ones = new double[s.size()];
      for (int i = 0; i < s.size(); i++) {
        xs[i] = s.get(i).bytes() / 1e6 / s.get(i).timeUs();
        ones[i] = 1;
      }
      b = new double[] {0, LeastSquares.slopeThroughOrigin(xs, ones)};
    }
    if (b[0] < 0 || b[1] <= 0 || (kneed && b[2] <= 0)) {
      return null;
    }
    double first = 1e12 / b[1];
    return kneed
        ? new HostLine(b[0], first, knee, 1e12 / b[2])
        : new HostLine(b[0], first, 0, first);
  }

  private static double maxErrorPct(HostLine line, List<CollectiveSample> s) {
    double max = 0;
    for (CollectiveSample c : s) {
      max = Math.max(max, Math.abs(line.timeUs(c.bytes()) / c.timeUs() - 1) * 100);
    }
    return max;
  }
}
