package dev.ringmaster.parallel.bench;

import java.util.List;

/**
 * When a benchmarked point has been measured often enough, and what it reports. Every point runs
 * {@code minTrials} trials; a point whose two smallest trial medians differ by more than {@link
 * #AGREEMENT} runs more, up to {@code maxTrials}, and its figure is the smallest trial median. On a
 * host shared with other work, whatever disturbs a trial (another process on the cores, a rank
 * descheduled mid-collective) only adds time, so the smallest median is the undisturbed figure once
 * a second trial confirms it; a point never confirmed says so ({@link #agreed}).
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

  /** The reported figure: the smallest trial median. */
  static double figure(List<Double> trialMedians) {
    return trialMedians.stream().mapToDouble(Double::doubleValue).min().orElseThrow();
  }

  /** What a point's figure is, in words, for {@code minTrials} trials of {@code iterations}. */
  static String describe(int minTrials, int iterations) {
    String median = "median of " + iterations + " iterations";
    if (minTrials == 1) {
      return median;
    }
    return String.format(
        "min over %d-%d trials of the %s (more trials until the two smallest agree within %.0f%%)",
        minTrials, maxTrials(minTrials), median, AGREEMENT * 100);
  }
}
