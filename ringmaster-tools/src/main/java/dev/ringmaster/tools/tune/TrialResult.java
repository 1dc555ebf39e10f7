package dev.ringmaster.tools.tune;

import java.util.List;
import java.util.Map;

/**
 * One line of the evidence file: what a trial ran and what came of it.
 *
 * @param id the trial's key ({@link Trial#id})
 * @param settings the trial's settings
 * @param status {@code ok}, {@code failed} or {@code timeout}
 * @param phase where it ended: {@code start-up}, {@code run} or {@code done}
 * @param cause for a failure, what kind: {@code refused flags}, {@code out of memory}, {@code
 *     assertion}, {@code crashed}, {@code requests failed}, {@code start-up timeout}, {@code run
 *     timeout}; "" when ok
 * @param exitCode the server's exit status when it exited by itself, else null
 * @param lastError the last error line of the server's log or the client's error, "" when none
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
    Double spread) {

  /** Copies the list; an evidence line without samples (one run) gets its objective's. */
  public TrialResult {
    if (samples == null) {
      samples = objective == null ? List.of() : List.of(objective);
    }
    samples = List.copyOf(samples);
    if (spread == null && objective != null) {
      spread = 0.0;
    }
  }

  /** Whether the trial produced a measurement. */
  public boolean ok() {
    return status.equals("ok");
  }
}
