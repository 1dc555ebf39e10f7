package dev.ringmaster.tools.tune;

import java.util.List;
import java.util.Locale;

/**
 * The trials ranked by the objective's median, the failures with their causes, the verdict (a
 * winner, or the trials tied within the noise) and the launch command, as Markdown (the same text
 * goes to the terminal and to {@code report.md}).
 *
 * @param config the tune
 * @param trials the grid
 * @param results every trial's record, pruned points included
 * @param pruning what ruled points out (for the notes and the predictions' source)
 * @param chart whether {@link #CHART} is drawn beside the report (the runtime can draw PNGs)
 */
public record TuneReport(
    TuneConfig config,
    List<Trial> trials,
    List<TrialResult> results,
    Pruning pruning,
    boolean chart) {

  /** A report of a tune that pruned nothing, with its chart. */
  public TuneReport(TuneConfig config, List<Trial> trials, List<TrialResult> results) {
    this(config, trials, results, Pruning.none(), true);
  }

  /** The chart's file name beside {@code report.md}. */
  public static final String CHART = "trials.png";

  /** The ranking and the winner or the tie. */
  public Verdict verdict() {
    return Verdict.of(results, config.objective());
  }

  /** The measured trials, best first. */
  public List<TrialResult> ranked() {
    return verdict().ranked();
  }

  /** The trials that ran and did not produce a measurement, in grid order. */
  public List<TrialResult> failures() {
    return results.stream().filter(r -> !r.ok() && !r.wasPruned()).toList();
  }

  /** The points left out before running, in grid order. */
  public List<TrialResult> pruned() {
    return results.stream().filter(TrialResult::wasPruned).toList();
  }

  /**
   * Spearman's rank correlation between the predicted and the measured objective over the measured
   * trials that have a prediction (1: the simulator ranked them as they measured), or null for
   * fewer than two such trials.
   */
  public Double rankCorrelation() {
    List<TrialResult> both = ranked().stream().filter(r -> r.predicted() != null).toList();
    if (both.size() < 2) {
      return null;
    }
    double[] measured = Stats.ranks(both.stream().map(TrialResult::objective).toList());
    double[] predicted = Stats.ranks(both.stream().map(TrialResult::predicted).toList());
    return Stats.pearson(measured, predicted);
  }

  /** The best trial's launch command, or null when no trial was measured. */
  public String winnerCommand() {
    TrialResult best = verdict().best();
    return best == null ? null : command(best);
  }

  private String command(TrialResult r) {
    return config.launchCommand(new Trial(0, r.settings()));
  }

  /** The report. */
  public String markdown() {
    Objective obj = config.objective();
    Verdict v = verdict();
    StringBuilder sb = new StringBuilder();
    sb.append("# ringmaster tune: ").append(config.model()).append("\n\n");
    sb.append(
        String.format(
            Locale.ROOT,
            "%d trials: %d measured, %d failed, %d pruned. Objective: %s of %s, the median of %d"
                + " repeat%s per trial.%n%n",
            trials.size(),
            v.ranked().size(),
            failures().size(),
            pruned().size(),
            obj.describe(),
            workloadText(),
            config.repeats(),
            config.repeats() == 1 ? "" : "s"));
    if (chart && !v.ranked().isEmpty()) {
      sb.append("![trials by objective](").append(CHART).append(")\n\n");
    }
    boolean predictedColumn = v.ranked().stream().anyMatch(r -> r.predicted() != null);
    if (config.isOneBatch()) {
      oneBatchTable(sb, v, predictedColumn);
    } else {
      serveTable(sb, v, predictedColumn);
    }
    Double rho = rankCorrelation();
    if (predictedColumn) {
      sb.append("\nPredicted by ")
          .append(pruning.predictor() == null ? "the simulator" : pruning.predictor().describe())
          .append(". ");
      sb.append(
          rho == null
              ? "Fewer than two measured trials have a prediction: no rank correlation.\n"
              : String.format(
                  Locale.ROOT,
                  "Rank correlation (Spearman) of predicted and measured: %.2f over %d trials.%n",
                  rho,
                  v.ranked().stream().filter(r -> r.predicted() != null).count()));
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
    if (!pruned().isEmpty() || !pruning.notes().isEmpty()) {
      sb.append("\n## Pruned before running\n\n");
      pruning.notes().forEach(n -> sb.append(n).append("\n\n"));
      if (!pruned().isEmpty()) {
        sb.append("| settings | cause | reason |\n|---|---|---|\n");
        for (TrialResult r : pruned()) {
          sb.append(
              String.format(
                  Locale.ROOT,
                  "| `%s` | %s | %s |%n",
                  r.id(),
                  r.cause(),
                  r.lastError().replace("|", "\\|")));
        }
      }
    }
    sb.append("\n");
    verdictText(sb, v);
    return sb.toString();
  }

  private String workloadText() {
    if (config.isOneBatch()) {
      TuneConfig.OneBatchWorkload b = config.oneBatch();
      return String.format(
          Locale.ROOT,
          "`bench one-batch` (batch %d, input %d, output %d, %d warm-up round%s of %d decode"
              + " steps)",
          b.batchSize(),
          b.inputLen(),
          b.outputLen(),
          b.warmupRounds(),
          b.warmupRounds() == 1 ? "" : "s",
          b.warmupDecodeSteps());
    }
    return String.format(
        Locale.ROOT,
        "`bench serve` (%d prompts, input %d, output %d, concurrency %s)",
        config.workload().dataset().numPrompts(),
        config.workload().dataset().randomInputLen(),
        config.workload().dataset().randomOutputLen(),
        config.workload().load().maxConcurrency() == null
            ? "unbounded"
            : config.workload().load().maxConcurrency().toString());
  }

  private void oneBatchTable(StringBuilder sb, Verdict v, boolean predictedColumn) {
    Objective obj = config.objective();
    sb.append("| rank | settings | median ").append(obj.unit()).append(" | spread | runs |");
    sb.append(predictedColumn ? " predicted | predicted rank |" : "");
    sb.append(" prefill tok/s | decode tok/s | prefill ms | decode ms/step | wall s |\n");
    sb.append("|---:|---|---:|---:|---:|").append(predictedColumn ? "---:|---:|" : "");
    sb.append("---:|---:|---:|---:|---:|\n");
    int rank = 1;
    for (TrialResult r : v.ranked()) {
      sb.append(
          String.format(
              Locale.ROOT,
              "| %d | `%s` | %.1f | %.1f | %d |",
              rank++,
              r.id(),
              r.objective(),
              r.spread(),
              r.samples().size()));
      if (predictedColumn) {
        predictedCells(sb, r);
      }
      sb.append(
          String.format(
              Locale.ROOT,
              " %.1f | %.1f | %.1f | %.2f | %.1f |%n",
              metric(r, "prefill_tokens_per_s"),
              metric(r, "decode_tokens_per_s"),
              metric(r, "prefill_ms"),
              metric(r, "decode_median_ms"),
              r.wallSeconds()));
    }
  }

  private static void predictedCells(StringBuilder sb, TrialResult r) {
    sb.append(
        r.predicted() == null
            ? " | |"
            : String.format(Locale.ROOT, " %.1f | %d |", r.predicted(), r.predictedRank()));
  }

  private void serveTable(StringBuilder sb, Verdict v, boolean predictedColumn) {
    Objective obj = config.objective();
    boolean throughputColumn = obj.kind() != Objective.Kind.THROUGHPUT;
    boolean sloColumn = obj.sloTtftMs() != null || obj.sloTpotMs() != null;
    sb.append("| rank | settings | median ").append(obj.unit()).append(" | spread | runs |");
    sb.append(throughputColumn ? " output tok/s |" : "");
    sb.append(predictedColumn ? " predicted | predicted rank |" : "");
    sb.append(" req/s | median TTFT ms | median TPOT ms |");
    sb.append(sloColumn ? " SLO met |" : "").append(" wall s |\n");
    sb.append("|---:|---|---:|---:|---:|").append(throughputColumn ? "---:|" : "");
    sb.append(predictedColumn ? "---:|---:|" : "");
    sb.append("---:|---:|---:|").append(sloColumn ? "---:|" : "").append("---:|\n");
    int rank = 1;
    for (TrialResult r : v.ranked()) {
      sb.append(
          String.format(
              Locale.ROOT,
              "| %d | `%s` | %.1f | %.1f | %d |",
              rank++,
              r.id(),
              r.objective(),
              r.spread(),
              r.samples().size()));
      if (throughputColumn) {
        sb.append(String.format(Locale.ROOT, " %.1f |", metric(r, "output_throughput")));
      }
      if (predictedColumn) {
        predictedCells(sb, r);
      }
      sb.append(
          String.format(
              Locale.ROOT,
              " %.2f | %.1f | %.1f |",
              metric(r, "request_throughput"),
              metric(r, "median_ttft_ms"),
              metric(r, "median_tpot_ms")));
      if (sloColumn) {
        sb.append(String.format(Locale.ROOT, " %.0f%% |", 100 * metric(r, "slo_attainment")));
      }
      sb.append(String.format(Locale.ROOT, " %.1f |%n", r.wallSeconds()));
    }
  }

  private static double metric(TrialResult r, String key) {
    return r.metrics().getOrDefault(key, Double.NaN);
  }

  private void verdictText(StringBuilder sb, Verdict v) {
    Objective obj = config.objective();
    TrialResult best = v.best();
    if (best == null) {
      sb.append("No trial was measured: no winner.\n");
      return;
    }
    if (v.ranked().size() == 1) {
      sb.append("Winner `").append(best.id()).append("` (the only trial measured).\n\n");
      sb.append("Launch command:\n\n    ").append(command(best)).append('\n');
      return;
    }
    if (v.winner() != null) {
      TrialResult second = v.ranked().get(1);
      sb.append(
          String.format(
              Locale.ROOT,
              "Winner `%s`: %.1f %s, %.1f%% %s the runner-up `%s` (%.1f), %s.%n%n",
              best.id(),
              best.objective(),
              obj.unit(),
              100 * Math.abs(best.objective() / second.objective() - 1),
              obj.higherIsBetter() ? "above" : "below",
              second.id(),
              second.objective(),
              v.noNoiseEstimate()
                  ? "one run each, so no noise estimate (use --repeats 3 or more)"
                  : String.format(
                      Locale.ROOT,
                      "more than the noise of %.1f (the larger spread of the two)",
                      Verdict.noise(best, second))));
      sb.append("Launch command:\n\n    ").append(command(best)).append('\n');
      return;
    }
    sb.append(
        String.format(
            Locale.ROOT,
            "No winner: %d trials are tied with the best, their medians within the noise (the"
                + " larger spread of each pair):%n%n",
            v.tied().size()));
    for (TrialResult r : v.tied()) {
      sb.append(
          String.format(
              Locale.ROOT,
              "- `%s`: %.1f %s, spread %.1f%n",
              r.id(),
              r.objective(),
              obj.unit(),
              r.spread()));
    }
    sb.append("\nLaunch commands of the tied trials, best median first:\n\n");
    for (TrialResult r : v.tied()) {
      sb.append("    ").append(command(r)).append('\n');
    }
  }
}
