package dev.ringmaster.tools.tune;

import java.util.Comparator;
import java.util.List;
import java.util.Locale;

/**
 * The trials ranked by output tokens per second, the failures with their causes, and the winner's
 * launch command, as Markdown (the same text goes to the terminal and to {@code report.md}).
 *
 * @param config the tune
 * @param trials the grid
 * @param results every trial's record
 */
public record TuneReport(TuneConfig config, List<Trial> trials, List<TrialResult> results) {

  /** The measured trials, best first. */
  public List<TrialResult> ranked() {
    return results.stream()
        .filter(TrialResult::ok)
        .sorted(Comparator.comparingDouble(TrialResult::objective).reversed())
        .toList();
  }

  /** The trials that did not produce a measurement, in grid order. */
  public List<TrialResult> failures() {
    return results.stream().filter(r -> !r.ok()).toList();
  }

  /** The winner's launch command, or null when no trial was measured. */
  public String winnerCommand() {
    List<TrialResult> r = ranked();
    if (r.isEmpty()) {
      return null;
    }
    return config.launchCommand(new Trial(0, r.getFirst().settings()));
  }

  /** The report. */
  public String markdown() {
    StringBuilder sb = new StringBuilder();
    sb.append("# ringmaster tune: ").append(config.model()).append("\n\n");
    sb.append(
        String.format(
            Locale.ROOT,
            "%d trials: %d measured, %d failed. Objective: output tokens per second of `bench"
                + " serve` (%d prompts, input %d, output %d, concurrency %s).%n%n",
            trials.size(),
            ranked().size(),
            failures().size(),
            config.workload().dataset().numPrompts(),
            config.workload().dataset().randomInputLen(),
            config.workload().dataset().randomOutputLen(),
            config.workload().load().maxConcurrency() == null
                ? "unbounded"
                : config.workload().load().maxConcurrency().toString()));
    sb.append(
        "| rank | settings | output tok/s | req/s | median TTFT ms | median TPOT ms | wall s |\n");
    sb.append("|---:|---|---:|---:|---:|---:|---:|\n");
    int rank = 1;
    for (TrialResult r : ranked()) {
      sb.append(
          String.format(
              Locale.ROOT,
              "| %d | `%s` | %.1f | %.2f | %.1f | %.1f | %.1f |%n",
              rank++,
              r.id(),
              r.objective(),
              r.metrics().getOrDefault("request_throughput", Double.NaN),
              r.metrics().getOrDefault("median_ttft_ms", Double.NaN),
              r.metrics().getOrDefault("median_tpot_ms", Double.NaN),
              r.wallSeconds()));
    }
    if (!failures().isEmpty()) {
      sb.append("\n## Failures\n\n| settings | status | phase | cause | exit | last error |\n");
      sb.append("|---|---|---|---|---:|---|\n");
      for (TrialResult r : failures()) {
        sb.append(
            String.format(
                Locale.ROOT,
                "| `%s` | %s | %s | %s | %s | %s |%n",
                r.id(),
                r.status(),
                r.phase(),
                r.cause(),
                r.exitCode() == null ? "" : r.exitCode().toString(),
                r.lastError().replace("|", "\\|")));
      }
    }
    String cmd = winnerCommand();
    sb.append("\n");
    if (cmd == null) {
      sb.append("No trial was measured: no winner.\n");
    } else {
      List<TrialResult> r = ranked();
      if (r.size() > 1) {
        double gain = r.get(0).objective() / r.get(1).objective() - 1;
        sb.append(
            String.format(
                Locale.ROOT,
                "Winner `%s`: %.1f output tok/s, %.1f%% above the runner-up `%s` (one run each,"
                    + " so no noise estimate: rerun both when the gap is a few percent).%n%n",
                r.get(0).id(),
                r.get(0).objective(),
                100 * gain,
                r.get(1).id()));
      } else {
        sb.append("Winner `").append(r.getFirst().id()).append("` (the only trial measured).\n\n");
      }
      sb.append("Launch command:\n\n    ").append(cmd).append('\n');
    }
    return sb.toString();
  }
}
