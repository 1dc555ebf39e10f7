package dev.ringmaster.tools.tune;

import java.util.List;

/**
 * What rules points out before they run: checks applied to each point in order (the first that
 * rejects names the cause), then optionally the predictor's ranking, of which only the best {@code
 * simulateTop} points run.
 *
 * @param checks applied in order; empty for none
 * @param predictor ranks the points that pass the checks, or null for grid order
 * @param simulateTop how many of the ranked points run, at least 1 (ignored without a predictor)
 * @param notes what the report says about checks that could not be made (e.g. no hardware profile)
 */
public record Pruning(
    List<PointCheck> checks, TrialPredictor predictor, int simulateTop, List<String> notes) {

  /** Copies the lists and checks the count. */
  public Pruning {
    checks = List.copyOf(checks);
    notes = List.copyOf(notes);
    if (predictor != null && simulateTop < 1) {
      throw new IllegalArgumentException("--simulate-top must be at least 1, got " + simulateTop);
    }
  }

  /** Nothing pruned; every point runs in grid order. */
  public static Pruning none() {
    return new Pruning(List.of(), null, 0, List.of());
  }
}
