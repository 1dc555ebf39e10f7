package dev.ringmaster.sim.serve;

import java.util.List;

/**
 * What the serving model predicts for a {@code bench serve} workload, in bench serve's terms.
 *
 * @param durationS from the first request sent to the last token received
 * @param completed requests finished
 * @param outputThroughput generated tokens per second over the duration
 * @param requestThroughput requests per second
 * @param medianTtftMs median time to first token
 * @param meanTtftMs mean time to first token
 * @param p99TtftMs 99th percentile time to first token
 * @param medianItlMs median gap between a request's tokens
 * @param meanItlMs mean gap between a request's tokens
 * @param medianTpotMs median over requests of the time per output token after the first (bench
 *     serve's TPOT: from the first token to the last, over the tokens after the first)
 * @param meanTpotMs mean of the same
 * @param meanQueueMs mean time from arrival to admission (waiting for a running slot or KV blocks)
 * @param kvCapacityTokens tokens the KV pool holds
 * @param maxRunningRequests the running limit (flag or the engine's rule)
 * @param peakRunning most requests running at once
 * @param meanRunning mean requests running, weighted by time
 * @param peakWaiting most requests waiting at once
 * @param preemptions requests preempted for KV blocks (recomputed later)
 * @param cachedPromptFraction share of prompt tokens taken from the prefix cache
 * @param doesNotRun why the workload cannot run at all; empty when it runs
 * @param notes queueing and limits worth knowing
 */
public record ServeReport(
    double durationS,
    int completed,
    double outputThroughput,
    double requestThroughput,
    double medianTtftMs,
    double meanTtftMs,
    double p99TtftMs,
    double medianItlMs,
    double meanItlMs,
    double medianTpotMs,
    double meanTpotMs,
    double meanQueueMs,
    long kvCapacityTokens,
    int maxRunningRequests,
    int peakRunning,
    double meanRunning,
    int peakWaiting,
    long preemptions,
    double cachedPromptFraction,
    List<String> doesNotRun,
    List<String> notes) {

  /** Whether the workload can run. */
  public boolean runs() {
    return doesNotRun.isEmpty();
  }
}
