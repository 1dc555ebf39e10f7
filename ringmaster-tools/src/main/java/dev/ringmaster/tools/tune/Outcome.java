package dev.ringmaster.tools.tune;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** A trial's end, before it is stamped with the trial's facts. */
record Outcome(
    String status,
    String phase,
    String cause,
    Integer exitCode,
    String lastError,
    Double objective,
    Map<String, Double> metrics,
    List<Double> samples,
    Double spread) {
  /** The key of the objective's value in one run's metrics (not kept in the evidence). */
  static final String OBJECTIVE = "objective";

  /** The medians of the repeats' metrics; the objective's samples in run order. */
  static Outcome ok(List<Map<String, Double>> runs) {
    List<Double> samples = runs.stream().map(m -> m.get(OBJECTIVE)).toList();
    Map<String, Double> medians = new LinkedHashMap<>();
    for (String key : runs.getFirst().keySet()) {
      if (!key.equals(OBJECTIVE)) {
        medians.put(key, Stats.median(runs.stream().map(m -> m.get(key)).toList()));
      }
    }
    return new Outcome(
        "ok", "done", "", null, "", Stats.median(samples), medians, samples, Stats.range(samples));
  }

  /** This failure, its error saying which repeat it happened in. */
  Outcome inRepeat(int k, int n) {
    return prefixed("repeat " + k + " of " + n + ": ");
  }

  /** This failure, its error saying which warm-up run it happened in. */
  Outcome inWarmup(int k, int n) {
    return prefixed("warm-up run " + k + " of " + n + ": ");
  }

  private Outcome prefixed(String where) {
    return new Outcome(
        status, phase, cause, exitCode, where + lastError, objective, metrics, samples, spread);
  }

  static Outcome failed(String phase, String cause, Integer exitCode, String lastError) {
    return new Outcome(
        "failed", phase, cause, exitCode, lastError, null, Map.of(), List.of(), null);
  }

  static Outcome timeout(String phase, String cause, String lastError) {
    return new Outcome("timeout", phase, cause, null, lastError, null, Map.of(), List.of(), null);
  }

  /** The evidence record of {@code trial} ending in this outcome. */
  TrialResult result(Trial trial, double wallSeconds, List<String> command, Path log) {
    return new TrialResult(
        trial.id(),
        trial.settings(),
        status,
        phase,
        cause,
        exitCode,
        lastError,
        objective,
        metrics,
        wallSeconds,
        command,
        log.toString(),
        samples,
        spread);
  }
}
