package dev.ringmaster.sim.calibrate;

import dev.ringmaster.sim.calibrate.Measurements.CollectiveSample;
import dev.ringmaster.sim.hw.AlphaBeta;
import dev.ringmaster.sim.hw.HostCollectives;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Fits {@link HostCollectives} to in-process CPU allreduce samples: for every algorithm and rank
 * count with at least two message sizes, {@code time = base + bytes / bandwidth} by least squares
 * on relative error (sizes span five orders of magnitude, and a fit on absolute error would leave
 * the small ones to chance). Pairs without samples keep the base profile's constants.
 */
final class HostFit {
  // A flat line (time independent of size within the noise) gets this bandwidth: effectively free.
  private static final double UNBOUNDED = 1e18;

  private HostFit() {}

  static HostCollectives fit(
      HostCollectives base, List<CollectiveSample> samples, List<String> lines) {
    Map<String, List<CollectiveSample>> groups = new LinkedHashMap<>();
    for (CollectiveSample c : samples) {
      if (c.op().equals("allreduce")) {
        groups
            .computeIfAbsent(
                HostCollectives.key(c.algorithm(), c.ranks()), k -> new java.util.ArrayList<>())
            .add(c);
      }
    }
    Map<String, AlphaBeta> out = new LinkedHashMap<>(base.allreduce());
    int fitted = 0;
    for (Map.Entry<String, List<CollectiveSample>> e : groups.entrySet()) {
      List<CollectiveSample> s = e.getValue();
      if (s.stream().mapToDouble(CollectiveSample::bytes).distinct().count() < 2) {
        continue;
      }
      AlphaBeta ab = line(s);
      out.put(e.getKey(), ab);
      fitted++;
      double max = 0;
      for (CollectiveSample c : s) {
        max = Math.max(max, Math.abs(ab.timeUs(0, c.bytes()) / c.timeUs() - 1) * 100);
      }
      lines.add(
          String.format(
              "host %s: base %.2f us, %.3f GB/s (%d samples, max error %.1f%%)",
              e.getKey(), ab.baseUs(), ab.busBandwidth() / 1e9, s.size(), max));
    }
    if (fitted == 0) {
      return base;
    }
    return new HostCollectives(
        out,
        "fitted by simulate calibrate to bench collectives --device cpu: time = base + bytes /"
            + " bandwidth per algorithm and rank count");
  }

  private static AlphaBeta line(List<CollectiveSample> s) {
    double[][] x = new double[s.size()][];
    double[] y = new double[s.size()];
    for (int i = 0; i < s.size(); i++) {
      CollectiveSample c = s.get(i);
      double w = 1 / c.timeUs();
      x[i] = new double[] {w, c.bytes() / 1e6 * w}; // MB keeps the system well scaled
      y[i] = 1;
    }
    double[] b = LeastSquares.solve(x, y);
    if (b[0] < 0) {
      // no fixed cost to be seen: a line through the origin
      double[] xs = new double[s.size()];
      double[] ys = new double[s.size()];
      for (int i = 0; i < s.size(); i++) {
        xs[i] = s.get(i).bytes() / 1e6 / s.get(i).timeUs();
        ys[i] = 1;
      }
      b = new double[] {0, LeastSquares.slopeThroughOrigin(xs, ys)};
    }
    double bw = b[1] > 0 ? 1e12 / b[1] : UNBOUNDED;
    return new AlphaBeta(b[0], 0, bw);
  }
}
