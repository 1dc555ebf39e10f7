package dev.ringmaster.tools.tune;

import dev.ringmaster.util.Progress;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * Runs the grid: each trial not yet in the evidence file, in grid order, one at a time (trials
 * share the machine they measure), recording each as it ends; then writes {@code report.md}.
 */
public final class Tuner {
  private Tuner() {}

  /** The trials, each marked with its recorded status when the evidence file has it. */
  public static List<String> dryRun(TuneConfig config) {
    Map<String, TrialResult> done = recorded(config);
    List<String> out = new ArrayList<>();
    List<Trial> grid = config.space().grid();
    for (Trial t : grid) {
      TrialResult r = done.get(t.id());
      out.add(
          String.format(
              Locale.ROOT,
              "trial %d/%d %s: %s",
              t.number(),
              grid.size(),
              t.id(),
              r == null ? "to run: " + config.launchCommand(t) : "recorded (" + r.status() + ")"));
    }
    return out;
  }

  /**
   * Runs every trial not yet recorded and returns the report of all of them.
   *
   * @param log progress lines (trial n of N, its result, the best so far)
   */
  public static TuneReport run(TuneConfig config, PrintStream log)
      throws IOException, InterruptedException {
    Files.createDirectories(config.out());
    EvidenceLog evidence = new EvidenceLog(config.evidence());
    Map<String, TrialResult> done = recorded(config);
    List<Trial> grid = config.space().grid();
    TrialRunner runner = new TrialRunner(config);
    List<TrialResult> results = new ArrayList<>();
    TrialResult best = null;
    for (TrialResult r : done.values()) {
      best = better(config, best, r);
    }
    if (!done.isEmpty()) {
      log.printf(
          "tune: %d of %d trials recorded in %s; running the rest%n",
          grid.stream().filter(t -> done.containsKey(t.id())).count(),
          grid.size(),
          evidence.file());
    }
    try (Progress progress = Progress.start("tune", grid.size(), "trials")) {
      for (Trial t : grid) {
        TrialResult r = done.get(t.id());
        if (r == null) {
          log.printf(Locale.ROOT, "tune: trial %d/%d %s%n", t.number(), grid.size(), t.id());
          r = runner.run(t);
          evidence.append(r);
          best = better(config, best, r);
          log.printf(
              Locale.ROOT,
              "tune: trial %d/%d %s (%.1f s); best so far %s%n",
              t.number(),
              grid.size(),
              r.ok()
                  ? String.format(
                      Locale.ROOT,
                      "ok, %.1f %s (spread %.1f)",
                      r.objective(),
                      config.objective().unit(),
                      r.spread())
                  : r.status() + " at " + r.phase() + ": " + r.cause() + " (" + r.lastError() + ")",
              r.wallSeconds(),
              best == null
                  ? "none"
                  : String.format(
                      Locale.ROOT,
                      "%.1f %s [%s]",
                      best.objective(),
                      config.objective().unit(),
                      best.id()));
        }
        results.add(r);
        progress.step(1);
      }
    }
    TuneReport report = new TuneReport(config, grid, results);
    Files.writeString(config.out().resolve("report.md"), report.markdown());
    if (!report.ranked().isEmpty()) {
      TuneChart.write(config.out().resolve(TuneReport.CHART), report);
    }
    return report;
  }

  /** The better of the best so far and a new result by the objective. */
  private static TrialResult better(TuneConfig config, TrialResult best, TrialResult r) {
    if (!r.ok()) {
      return best;
    }
    return best == null || config.objective().better(r.objective(), best.objective()) ? r : best;
  }

  private static Map<String, TrialResult> recorded(TuneConfig config) {
    // the latest record of a point wins (a point can be recorded again after a manual edit)
    return new EvidenceLog(config.evidence())
        .read().stream()
            .collect(Collectors.toMap(TrialResult::id, Function.identity(), (a, b) -> b));
  }
}
