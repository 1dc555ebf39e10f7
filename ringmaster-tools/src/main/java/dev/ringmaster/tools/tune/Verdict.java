package dev.ringmaster.tools.tune;

import java.util.Comparator;
import java.util.List;

/**
 * The outcome of a tune's measured trials: the best, and the trials tied with it. Noise between two
 * trials is the larger of their two spreads (each the range of its repeats); a trial is tied with
 * the best when their medians differ by no more than that. A winner is declared only when nothing
 * else is tied with the best.
 *
 * @param ranked the measured trials, best median first
 * @param tied the best and every trial within the noise of it, in rank order (empty with no
 *     measured trial)
 */
public record Verdict(List<TrialResult> ranked, List<TrialResult> tied) {

  /** Copies the lists. */
  public Verdict {
    ranked = List.copyOf(ranked);
    tied = List.copyOf(tied);
  }

  /** Ranks the measured trials of {@code results} by {@code objective}. */
  public static Verdict of(List<TrialResult> results, Objective objective) {
    Comparator<TrialResult> byObjective = Comparator.comparingDouble(TrialResult::objective);
    List<TrialResult> ranked =
        results.stream()
            .filter(TrialResult::ok)
            .sorted(objective.higherIsBetter() ? byObjective.reversed() : byObjective)
            .toList();
    if (ranked.isEmpty()) {
      return new Verdict(ranked, List.of());
    }
    TrialResult best = ranked.getFirst();
    List<TrialResult> tied =
        ranked.stream()
            .filter(r -> r == best || Math.abs(best.objective() - r.objective()) <= noise(best, r))
            .toList();
    return new Verdict(ranked, tied);
  }

  /** The noise between two trials: the larger of their spreads. */
  public static double noise(TrialResult a, TrialResult b) {
    return Math.max(a.spread(), b.spread());
  }

  /** The best trial, or null when none was measured. */
  public TrialResult best() {
    return ranked.isEmpty() ? null : ranked.getFirst();
  }

  /** The winner: the best when it beats every other trial by more than the noise, else null. */
  public TrialResult winner() {
    return tied.size() == 1 ? tied.getFirst() : null;
  }

  /** Whether every measured trial ran once, so no noise could be estimated. */
  public boolean noNoiseEstimate() {
    return ranked.stream().allMatch(r -> r.samples().size() < 2);
  }
}
