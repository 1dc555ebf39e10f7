package dev.ringmaster.tools.tune;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.OptionalDouble;

/**
 * What a tune will do before it runs anything: the points its checks rule out (each with its cause
 * and reason), the simulator's predictions and ranking, and the points to run in the order they run
 * (grid order, or best predicted first with {@code --simulate-first}).
 *
 * @param pruned the new records of points ruled out, in grid order
 * @param toRun the points to run (recorded ones included), in run order
 * @param predictions predicted objective per point id
 * @param ranks place in the predicted ranking per point id, from 1
 */
record TunePlan(
    List<TrialResult> pruned,
    List<Trial> toRun,
    Map<String, Double> predictions,
    Map<String, Integer> ranks) {

  /** Plans {@code grid} under {@code pruning}; points recorded in {@code done} are not judged. */
  static TunePlan of(
      TuneConfig config, Pruning pruning, List<Trial> grid, Map<String, TrialResult> done) {
    List<TrialResult> pruned = new ArrayList<>();
    List<Trial> candidates = new ArrayList<>();
    for (Trial t : grid) {
      TrialResult r = done.get(t.id());
      if (r != null) {
        if (!r.wasPruned()) {
          candidates.add(t);
        }
        continue;
      }
      TrialResult rejected = null;
      for (PointCheck c : pruning.checks()) {
        var reason = c.reject(config, t);
        if (reason.isPresent()) {
          rejected = TrialResult.pruned(t, c.cause(), reason.get(), null, null);
          break;
        }
      }
      if (rejected != null) {
        pruned.add(rejected);
      } else {
        candidates.add(t);
      }
    }
    Map<String, Double> predictions = new HashMap<>();
    Map<String, Integer> ranks = new HashMap<>();
    if (pruning.predictor() == null) {
      return new TunePlan(pruned, candidates, predictions, ranks);
    }
    for (Trial t : candidates) {
      OptionalDouble p = pruning.predictor().predict(config, t);
      if (p.isPresent()) {
        predictions.put(t.id(), p.getAsDouble());
      }
    }
    Objective obj = config.objective();
    List<Trial> ranked = new ArrayList<>(candidates);
    // best predicted first (stable: ties keep grid order), the unpredicted last in grid order
    ranked.sort(
        Comparator.comparing((Trial t) -> !predictions.containsKey(t.id()))
            .thenComparingDouble(
                t -> {
                  Double v = predictions.get(t.id());
                  return v == null ? 0 : obj.higherIsBetter() ? -v : v;
                }));
    int predicted = 0;
    for (Trial t : ranked) {
      if (predictions.containsKey(t.id())) {
        ranks.put(t.id(), ++predicted);
      }
    }
    int top = pruning.simulateTop();
    List<Trial> toRun = new ArrayList<>(ranked.subList(0, Math.min(top, ranked.size())));
    Map<String, TrialResult> later = new LinkedHashMap<>();
    for (Trial t : ranked.subList(toRun.size(), ranked.size())) {
      if (done.containsKey(t.id())) {
        toRun.add(t); // measured already: it stays in the evidence and the ranking
        continue;
      }
      Double v = predictions.get(t.id());
      String reason =
          v == null
              ? pruning.predictor().describe()
                  + " cannot predict this point; --simulate-top "
                  + top
                  + " runs only the best predicted"
              : String.format(
                  Locale.ROOT,
                  "predicted %.1f %s, rank %d of %d by %s; --simulate-top %d runs the best %d",
                  v,
                  obj.unit(),
                  ranks.get(t.id()),
                  predicted,
                  pruning.predictor().describe(),
                  top,
                  top);
      later.put(t.id(), TrialResult.pruned(t, "simulate-first", reason, v, ranks.get(t.id())));
    }
    // every pruned record in grid order
    List<TrialResult> all = new ArrayList<>();
    for (Trial t : grid) {
      pruned.stream().filter(r -> r.id().equals(t.id())).findFirst().ifPresent(all::add);
      if (later.containsKey(t.id())) {
        all.add(later.get(t.id()));
      }
    }
    return new TunePlan(all, toRun, predictions, ranks);
  }
}
