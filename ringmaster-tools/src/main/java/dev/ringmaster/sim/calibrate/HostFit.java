package dev.ringmaster.sim.calibrate;

import dev.ringmaster.sim.calibrate.Measurements.CollectiveSample;
import dev.ringmaster.sim.hw.HostCollectives;
import dev.ringmaster.sim.hw.HostLine;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Fits {@link HostCollectives} to in-process CPU allreduce samples, per algorithm and rank count
 * with at least two message sizes. For each candidate set of knees (none, one, or two at measured
 * sizes) the line's constants minimise the largest relative error (a minimax fit: accuracy is
 * judged point by point, and sizes span five orders of magnitude, so absolute error would leave the
 * small ones to chance); the candidate kept has the smallest largest error, a further knee only
 * where it saves {@link #MIN_GAIN_PER_KNEE_PCT}. The knees are the cache levels the ranks' working
 * set leaves: a core's own L2 (the rate rises past it on the 2-core VM, where streams of a few
 * hundred KiB prefetch well), then the shared L3 (the rate falls to memory's). Pairs without
 * samples keep the base profile's constants.
 */
final class HostFit {
  /** Reweighting steps of the minimax fit: 17 sizes x 4 constants settle well within this. */
  private static final int MINIMAX_ITERATIONS = 300;

  /**
   * Percentage points of largest error a knee has to save to be kept: less than that is the noise
   * between back-to-back runs, not a cache level.
   */
  static final double MIN_GAIN_PER_KNEE_PCT = 2;

  private HostFit() {}

  static HostCollectives fit(
      HostCollectives base, List<CollectiveSample> samples, List<String> lines) {
    Map<String, List<CollectiveSample>> groups = new LinkedHashMap<>();
    for (CollectiveSample c : samples) {
      if (c.op().equals("allreduce")) {
        // CPU groups run FUSED as one-shot: there is nothing to fuse between threads
        String algo = c.algorithm().equals("fused") ? "oneshot" : c.algorithm();
        groups.computeIfAbsent(HostCollectives.key(algo, c.ranks()), k -> new ArrayList<>()).add(c);
      }
    }
    Map<String, HostLine> out = new LinkedHashMap<>(base.allreduce());
    int fitted = 0;
    for (Map.Entry<String, List<CollectiveSample>> e : groups.entrySet()) {
      List<CollectiveSample> s = e.getValue();
      if (s.stream().mapToDouble(CollectiveSample::bytes).distinct().count() < 2) {
        lines.add(kept(e.getKey(), s.size(), "fewer than two message sizes"));
        continue;
      }
      // inner sizes only: a knee at either end would stand in for the fixed cost or the last slope
      double[] sizes =
          s.stream().mapToDouble(CollectiveSample::bytes).distinct().sorted().toArray();
      List<double[]> candidates = new ArrayList<>();
      candidates.add(new double[0]); // no knee: one line
      for (int i = 2; i < sizes.length - 1; i++) {
        candidates.add(new double[] {sizes[i]});
        for (int j = i + 1; j < sizes.length - 1; j++) {
          candidates.add(new double[] {sizes[i], sizes[j]});
        }
      }
      HostLine best = null;
      double bestErr = Double.POSITIVE_INFINITY;
      int bestKnees = 0;
      for (double[] knees : candidates) {
        HostLine line = line(s, knees);
        if (line == null) {
          continue;
        }
        double err = maxErrorPct(line, s);
        // each further knee has to buy its keep: a cache level, not a wiggle of the noise
        double needed = (knees.length - bestKnees) * MIN_GAIN_PER_KNEE_PCT;
        if (best == null || err < bestErr - needed) {
          best = line;
          bestErr = err;
          bestKnees = knees.length;
        }
      }
      if (best == null) {
        // e.g. noisy latency-bound samples whose time does not grow with the size
        lines.add(kept(e.getKey(), s.size(), "no line with a positive cost per byte fits"));
        continue;
      }
      out.put(e.getKey(), best);
      fitted++;
      lines.add(describe(e.getKey(), best, s.size(), bestErr));
    }
    if (fitted == 0) {
      return base;
    }
    return new HostCollectives(
        out,
        "fitted by simulate calibrate to bench collectives --device cpu: per algorithm and rank"
            + " count, a fixed cost plus bytes at a rate per cache regime (up to two knees),"
            + " minimax on relative error");
  }

  /**
   * The minimax line with knees at {@code knees} bytes (none, one or two, ascending), or null when
   * a fitted rate comes out non-positive or, with a knee, the fixed cost negative.
   */
  private static HostLine line(List<CollectiveSample> s, double[] knees) {
    int segments = knees.length + 1;
    double[] edges = new double[segments + 1];
    System.arraycopy(knees, 0, edges, 1, knees.length);
    edges[segments] = Double.POSITIVE_INFINITY;
    double[][] x = new double[s.size()][segments + 1];
    double[] y = new double[s.size()];
    for (int i = 0; i < s.size(); i++) {
      CollectiveSample c = s.get(i);
      // relative error: every row divided by the measured time
      double w = 1 / c.timeUs();
      x[i][0] = w;
      for (int k = 0; k < segments; k++) {
        // MB keep the system well scaled
        double inSegment = Math.max(0, Math.min(c.bytes(), edges[k + 1]) - edges[k]);
        x[i][k + 1] = inSegment / 1e6 * w;
      }
      y[i] = 1;
    }
    double[] b;
    try {
      b = LeastSquares.minimax(x, y, MINIMAX_ITERATIONS);
    } catch (IllegalArgumentException singular) {
      return null; // e.g. a knee with no size beyond it
    }
    if (knees.length == 0 && b[0] < 0) {
      // no fixed cost to be seen: a line through the origin
      double[] xs = new double[s.size()];
      double[] ones = new double[s.size()];
      for (int i = 0; i < s.size(); i++) {
        xs[i] = s.get(i).bytes() / 1e6 / s.get(i).timeUs();
        ones[i] = 1;
      }
      b = new double[] {0, LeastSquares.slopeThroughOrigin(xs, ones)};
    }
    if (b[0] < 0) {
      return null;
    }
    for (int k = 1; k < b.length; k++) {
      if (b[k] <= 0) {
        return null;
      }
    }
    // b[k] is microseconds per MB: bytes per second is 1e12 / b[k]
    return switch (knees.length) {
      case 0 -> new HostLine(b[0], 1e12 / b[1], 0, 1e12 / b[1]);
      case 1 -> new HostLine(b[0], 1e12 / b[1], knees[0], 1e12 / b[2]);
      default -> new HostLine(b[0], 1e12 / b[1], knees[0], 1e12 / b[3], knees[1], 1e12 / b[2]);
    };
  }

  /** The line for an algorithm whose samples left the base profile's constants in place. */
  private static String kept(String key, int samples, String why) {
    return String.format(
        Locale.ROOT, "host %s: base profile kept (%d samples: %s)", key, samples, why);
  }

  /** The fit's line for the calibration report. */
  private static String describe(String key, HostLine l, int samples, double maxErrorPct) {
    StringBuilder b =
        new StringBuilder(
            String.format(
                Locale.ROOT,
                "host %s: base %.2f us, %.3f GB/s",
                key,
                l.baseUs(),
                l.cachedBandwidth() / 1e9));
    if (l.twoKnees()) {
      b.append(
          String.format(
              Locale.ROOT,
              ", beyond %.0f KiB %.3f GB/s",
              l.kneeBytes() / 1024,
              l.middleBandwidth() / 1e9));
      b.append(
          String.format(
              Locale.ROOT,
              ", beyond %.0f KiB %.3f GB/s",
              l.secondKneeBytes() / 1024,
              l.memoryBandwidth() / 1e9));
    } else if (l.kneeBytes() > 0) {
      b.append(
          String.format(
              Locale.ROOT,
              ", beyond %.0f KiB %.3f GB/s",
              l.kneeBytes() / 1024,
              l.memoryBandwidth() / 1e9));
    }
    b.append(String.format(Locale.ROOT, " (%d samples, max error %.1f%%)", samples, maxErrorPct));
    return b.toString();
  }

  private static double maxErrorPct(HostLine line, List<CollectiveSample> s) {
    double max = 0;
    for (CollectiveSample c : s) {
      max = Math.max(max, Math.abs(line.timeUs(c.bytes()) / c.timeUs() - 1) * 100);
    }
    return max;
  }
}
