package dev.ringmaster.tools.tune;

import java.util.List;
import java.util.Map;

/**
 * One line of the evidence file: what a trial ran and what came of it.
 *
 * @param id the trial's key ({@link Trial#id})
 * @param settings the trial's settings
 * @param status {@code ok}, {@code failed}, {@code timeout} or {@code pruned} (not run)
 * @param phase where it ended: {@code start-up}, {@code run}, {@code done} or {@code pruned}
 * @param cause for a failure, what kind: {@code refused flags}, {@code out of memory}, {@code
 *     assertion}, {@code crashed}, {@code requests failed}, {@code start-up timeout}, {@code run
 *     timeout}; for a pruned point why: {@code doctor}, {@code does not run}, {@code
 *     simulate-first}; "" when ok
 * @param exitCode the server's exit status when it exited by itself, else null
 * @param lastError the last error line of the server's log or the client's error, for a pruned
 *     point the reason; "" when none
 * @param objective the median over the repeats of the tune's {@link Objective} (null when it
 *     failed)
 * @param metrics the run's figures, each the median over the repeats (output, request and token
 *     throughput, goodput and SLO attainment, TTFT, TPOT and E2E latency in ms, duration)
 * @param wallSeconds the trial's wall time
 * @param command the server's command line
 * @param log the server's log file
 * @param samples the objective of each repeat, in run order (empty when it failed)
 * @param spread the noise of the objective: the largest minus the smallest sample (0 for one
 *     sample, null when it failed)
 * @param predicted the simulator's prediction of the objective, null without {@code
 *     --simulate-first} or when it could not predict this point
 * @param predictedRank the point's place in the simulator's ranking, from 1; null without one
 */
public record TrialResult(
    String id,
    Map<String, String> settings,
    String status,
    String phase,
    String cause,
    Integer exitCode,
    String lastError,
    Double objective,
    Map<String, Double> metrics,
    double wallSeconds,
    List<String> command,
    String log,
    List<Double> samples,
    Double spread,
    Double predicted,
    Integer predictedRank) {

  /** A record without a prediction. */
  public TrialResult(
      String id,
      Map<String, String> settings,
      String status,
      String phase,
      String cause,
      Integer exitCode,
      String lastError,
      Double objective,
      Map<String, Double> metrics,
      double wallSeconds,
      List<String> command,
      String log,
      List<Double> samples,
      Double spread) {
    this(
        id,
        settings,
        status,
        phase,
        cause,
        exitCode,
        lastError,
        objective,
        metrics,
        wallSeconds,
        command,
        log,
        samples,
        spread,
        null,
        null);
  }

  /** The record of a point left out before running: {@code cause} and {@code reason}. */
  public static TrialResult pruned(
      Trial trial, String cause, String reason, Double predicted, Integer predictedRank) {
    return new TrialResult(
        trial.id(),
        trial.settings(),
        PRUNED,
        PRUNED,
        cause,
        null,
        reason,
        null,
        Map.of(),
        0,
        List.of(),
        "",
        List.of(),
        null,
        predicted,
        predictedRank);
  }

  /** The status and phase of a point that was not run. */
  public static final String PRUNED = "pruned";

  /** Copies the list; an evidence line without samples (one run) gets its objective's. */
  public TrialResult {
    if (samples == null) {
      samples = objective == null ? List.of() : List.of(objective);
    }
    samples = List.copyOf(samples);
    metrics = metrics == null ? Map.of() : metrics;
    command = command == null ? List.of() : List.copyOf(command);
    if (spread == null && objective != null) {
      spread = 0.0;
    }
  }

  /** Whether the trial produced a measurement. */
  public boolean ok() {
    return status.equals("ok");
  }

  /** Whether the point was left out before running. */
  public boolean wasPruned() {
    return status.equals(PRUNED);
  }

  /** This record with the simulator's prediction and rank. */
  public TrialResult withPrediction(Double value, Integer rank) {
    return new TrialResult(
        id,
        settings,
        status,
        phase,
        cause,
        exitCode,
        lastError,
        objective,
        metrics,
        wallSeconds,
        command,
        log,
        samples,
        spread,
        value,
        rank);
  }
}
