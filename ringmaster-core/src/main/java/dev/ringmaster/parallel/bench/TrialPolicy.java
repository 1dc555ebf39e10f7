package dev.ringmaster.parallel.bench;

import java.util.List;

/**
 * When a benchmarked point has been measured often enough, and what it reports. Every point runs
 * {@code minTrials} trials; a point whose two smallest trial medians differ by more than {@link
 * #AGREEMENT} runs more, up to {@code maxTrials}. On a host shared with other work, whatever
 * disturbs a trial (another process on the cores, a rank descheduled mid-collective) adds time, so
 * the figure is the smallest trial median that a second trial confirms (within {@link #AGREEMENT}):
 * the undisturbed figure, but not a lone trial that was faster than any other (on the 2-core VM,
 * one trial in ten or so, up to 2x faster at sizes near a cache boundary). A point with no two
 * trials that agree reports its smallest and says so ({@link #agreed}).
 */
final class TrialPolicy {
  /** How close the two smallest trial medians must be: 10%, half the model's error budget. */
  static final double AGREEMENT = 0.10;

  /** Trials beyond the minimum a point may run while its smallest two disagree. */
  static final int EXTRA_FACTOR = 4;

  private TrialPolicy() {}

  /** Most trials a point runs for a minimum of {@code minTrials}. */
  static int maxTrials(int minTrials) {
    return minTrials == 1 ? 1 : EXTRA_FACTOR * minTrials;
  }

  /** Whether the two smallest of {@code trialMedians} agree within {@link #AGREEMENT}. */
  static boolean agreed(List<Double> trialMedians) {
    if (trialMedians.size() < 2) {
      return false;
    }
    double[] s = trialMedians.stream().mapToDouble(Double::doubleValue).sorted().toArray();
    return s[1] <= s[0] * (1 + AGREEMENT);
  }

  /** Whether a point with these trials so far needs another. */
  static boolean needsAnother(List<Double> trialMedians, int minTrials) {
    int n = trialMedians.size();
    if (n < minTrials) {
      return true;
    }
    return n < maxTrials(minTrials) && !agreed(trialMedians);
  }

  /**
   * The reported figure: the smallest trial median with another within {@link #AGREEMENT} above it,
   * or the smallest where no two agree.
   */
  static double figure(List<Double> trialMedians) {
    double[] s = trialMedians.stream().mapToDouble(Double::doubleValue).sorted().toArray();
    for (int i = 0; i + 1 < s.length; i++) {
      if (s[i + 1] <= s[i] * (1 + AGREEMENT)) {
        return s[i];
      }
    }
    return s[0];
  }

  /** What a point's figure is, in words, for {@code minTrials} trials of {@code iterations}. */
  static String describe(int minTrials, int iterations) {
    if (minTrials == 1) {
      return "median of " + iterations + " iterations";
    }
    // short: every point of the JSON repeats it (the table header and --help say the rest)
    return String.format(
        "smallest of %d-%d trial medians of %d iterations confirmed within %.0f%%",
        minTrials, maxTrials(minTrials), iterations, AGREEMENT * 100);
  }
}
