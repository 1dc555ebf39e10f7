package dev.ringmaster.tools.tune;

import dev.ringmaster.util.PngSupport;
import dev.ringmaster.util.Progress;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * Runs the grid: first the points the checks rule out are recorded as pruned with their reasons,
 * then each point not yet in the evidence file runs, one at a time (trials share the machine they
 * measure), in grid order or best predicted first with {@code --simulate-first}, recorded as each
 * ends; then writes {@code report.md}.
 */
public final class Tuner {
  private Tuner() {}

  /** The trials, each marked with its recorded status when the evidence file has it. */
  public static List<String> dryRun(TuneConfig config) {
    return dryRun(config, Pruning.none());
  }

  /**
   * The trials in run order, each with its launch command, or why it is pruned, or its recorded
   * status; then the pruned points.
   */
  public static List<String> dryRun(TuneConfig config, Pruning pruning) {
    Map<String, TrialResult> done = recorded(config);
    List<Trial> grid = config.space().grid();
    TunePlan plan = TunePlan.of(config, pruning, grid, done);
    List<String> out = new ArrayList<>();
    for (Trial t : plan.toRun()) {
      TrialResult r = done.get(t.id());
      Double p = plan.predictions().get(t.id());
      out.add(
          String.format(
              Locale.ROOT,
              "trial %d/%d %s: %s%s",
              t.number(),
              grid.size(),
              t.id(),
              r == null ? "to run: " + config.launchCommand(t) : "recorded (" + r.status() + ")",
              p == null
                  ? ""
                  : String.format(
                      Locale.ROOT,
                      " [predicted %.1f %s, rank %d]",
                      p,
                      config.objective().unit(),
                      plan.ranks().get(t.id()))));
    }
    Map<String, Integer> numbers = new HashMap<>();
    grid.forEach(t -> numbers.put(t.id(), t.number()));
    for (TrialResult r : plan.pruned()) {
      out.add(
          String.format(
              Locale.ROOT,
              "trial %d/%d %s: pruned (%s): %s",
              numbers.get(r.id()),
              grid.size(),
              r.id(),
              r.cause(),
              r.lastError()));
    }
    return out;
  }

  /** Runs every trial not yet recorded, serve or one-batch by the config, nothing pruned. */
  public static TuneReport run(TuneConfig config, PrintStream log)
      throws IOException, InterruptedException {
    return run(config, Pruning.none(), TrialExecutor.of(config), log);
  }

  /**
   * Records the pruned points, runs every other trial not yet recorded and returns the report of
   * all of them.
   *
   * @param executor runs one trial (a child process in the CLI)
   * @param log progress lines (trial n of N, its result, the best so far)
   */
  public static TuneReport run(
      TuneConfig config, Pruning pruning, TrialExecutor executor, PrintStream log)
      throws IOException, InterruptedException {
    Files.createDirectories(config.out());
    EvidenceLog evidence = new EvidenceLog(config.evidence());
    Map<String, TrialResult> done = new HashMap<>(recorded(config));
    List<Trial> grid = config.space().grid();
    if (!done.isEmpty()) {
      log.printf(
          "tune: %d of %d trials recorded in %s; running the rest%n",
          grid.stream().filter(t -> done.containsKey(t.id())).count(),
          grid.size(),
          evidence.file());
    }
    pruning.notes().forEach(n -> log.println("tune: " + n));
    TunePlan plan = TunePlan.of(config, pruning, grid, done);
    Map<String, Integer> numbers = new HashMap<>();
    grid.forEach(t -> numbers.put(t.id(), t.number()));
    for (TrialResult r : plan.pruned()) {
      evidence.append(r);
      done.put(r.id(), r);
      log.printf(
          Locale.ROOT,
          "tune: trial %d/%d %s pruned (%s): %s%n",
          numbers.get(r.id()),
          grid.size(),
          r.id(),
          r.cause(),
          r.lastError());
    }
    long toRun = plan.toRun().stream().filter(t -> !done.containsKey(t.id())).count();
    log.printf(
        Locale.ROOT,
        "tune: %d of %d points to run%s%n",
        toRun,
        grid.size(),
        pruning.predictor() == null ? "" : ", best predicted first");
    TrialResult best = null;
    for (TrialResult r : done.values()) {
      best = better(config, best, r);
    }
    int n = 0;
    try (Progress progress = Progress.start("tune", toRun, "trials")) {
      for (Trial t : plan.toRun()) {
        if (done.containsKey(t.id())) {
          continue;
        }
        n++;
        log.printf(
            Locale.ROOT,
            "tune: run %d of %d: trial %d/%d %s%n",
            n,
            toRun,
            t.number(),
            grid.size(),
            t.id());
        TrialResult r =
            executor
                .run(t)
                .withPrediction(plan.predictions().get(t.id()), plan.ranks().get(t.id()));
        evidence.append(r);
        done.put(r.id(), r);
        best = better(config, best, r);
        log.printf(
            Locale.ROOT,
            "tune: run %d of %d: trial %d/%d %s (%.1f s); best so far %s%n",
            n,
            toRun,
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
        progress.step(1);
      }
    }
    List<TrialResult> results =
        grid.stream().map(t -> done.get(t.id())).filter(r -> r != null).toList();
    boolean chart = PngSupport.available();
    TuneReport report = new TuneReport(config, grid, results, pruning, chart);
    Files.writeString(config.out().resolve("report.md"), report.markdown());
    if (!report.ranked().isEmpty()) {
      if (chart) {
        TuneChart.write(config.out().resolve(TuneReport.CHART), report);
      } else {
        // the evidence is complete: a --resume of the same tune elsewhere draws the chart
        log.println(
            "tune: no "
                + TuneReport.CHART
                + ": "
                + PngSupport.missingReason()
                + " (`tune --resume` with the same flags and --out draws it from the evidence)");
      }
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
