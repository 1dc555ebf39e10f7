package dev.ringmaster.tools.benchserve;

import dev.ringmaster.model.tokenizer.Tokenizer;
import java.util.ArrayList;
import java.util.List;

/**
 * The figures of one run, computed as sglang.bench_serving computes them from its requests.
 * Latencies are in milliseconds, throughputs per second of the whole run.
 *
 * @param completed successful requests
 * @param totalInput prompt tokens of the successful requests (the dataset's count, else the
 *     server's)
 * @param totalOutput generated tokens of the successful requests
 * @param totalOutputRetokenized the generated text's tokens counted again by the tokenizer (the
 *     server's count without one)
 * @param ttft time to first token (the first chunk with text, as sglang times it)
 * @param ttftFirstToken time to the first chunk carrying a token, text or not, over the requests
 *     whose API streams token ids (empty for the OpenAI backends)
 * @param tpot time per output token after the first, one value per request of 2 tokens or more
 * @param itl inter-token latencies of every request
 * @param e2e end-to-end latencies
 * @param concurrency mean requests in flight: the sum of latencies over the duration
 * @param maxOutputTokensPerS the most tokens received in one wall-clock second
 * @param maxConcurrentRequests the most requests in flight in one wall-clock second
 */
public record ServingMetrics(
    int completed,
    long totalInput,
    long totalOutput,
    long totalOutputRetokenized,
    double durationS,
    Percentiles ttft,
    Percentiles ttftFirstToken,
    Percentiles tpot,
    Percentiles itl,
    Percentiles e2e,
    double concurrency,
    double maxOutputTokensPerS,
    int maxConcurrentRequests) {

  /** Requests completed per second. */
  public double requestThroughput() {
    return completed / durationS;
  }

  /** Prompt tokens per second. */
  public double inputThroughput() {
    return totalInput / durationS;
  }

  /** Generated tokens per second. */
  public double outputThroughput() {
    return totalOutput / durationS;
  }

  /** Prompt plus generated tokens per second. */
  public double totalThroughput() {
    return (totalInput + totalOutput) / durationS;
  }

  /**
   * The metrics of a run.
   *
   * @param rows the requests sent, in the order of {@code outputs}
   * @param durationS wall-clock seconds from the first request sent to the last answered
   * @param tokenizer re-counts the generated text; may be null
   */
  public static ServingMetrics of(
      List<DatasetRow> rows, List<RequestOutput> outputs, double durationS, Tokenizer tokenizer) {
    int completed = 0;
    long input = 0;
    long output = 0;
    long retokenized = 0;
    List<Double> ttfts = new ArrayList<>();
    List<Double> firstTokens = new ArrayList<>();
    List<Double> tpots = new ArrayList<>();
    List<Double> itls = new ArrayList<>();
    List<Double> e2es = new ArrayList<>();
    for (int i = 0; i < outputs.size(); i++) {
      RequestOutput o = outputs.get(i);
      if (!o.success()) {
        continue;
      }
      completed++;
      int promptLen =
          rows.get(i).promptLen() >= 0 ? rows.get(i).promptLen() : o.serverPromptTokens();
      input += Math.max(promptLen, 0);
      output += o.outputLen();
      retokenized +=
          tokenizer != null ? tokenizer.encode(o.generatedText(), false).length : o.outputLen();
      if (o.outputLen() > 1) {
        tpots.add((o.latencyS() - o.ttftS()) / (o.outputLen() - 1) * 1000);
      }
      for (double v : o.itlS()) {
        itls.add(v * 1000);
      }
      ttfts.add(o.ttftS() * 1000);
      if (!Double.isNaN(o.ttftFirstTokenS())) {
        firstTokens.add(o.ttftFirstTokenS() * 1000);
      }
      e2es.add(o.latencyS() * 1000);
    }
    double latencySum = e2es.stream().mapToDouble(Double::doubleValue).sum() / 1000;
    long[] peak = peaks(outputs);
    return new ServingMetrics(
        completed,
        input,
        output,
        retokenized,
        durationS,
        stats(ttfts),
        stats(firstTokens),
        stats(tpots),
        stats(itls),
        stats(e2es),
        latencySum / durationS,
        peak[0],
        (int) peak[1]);
  }

  private static Percentiles stats(List<Double> v) {
    return new Percentiles(v.stream().mapToDouble(Double::doubleValue).toArray());
  }

  /**
   * The busiest wall-clock second: tokens received in it (first token at TTFT, each next one an ITL
   * later) and requests in flight during it.
   */
  private static long[] peaks(List<RequestOutput> outputs) {
    long minStart = Long.MAX_VALUE;
    double maxEnd = Double.NEGATIVE_INFINITY;
    for (RequestOutput o : outputs) {
      if (o.success()) {
        minStart = Math.min(minStart, o.startNanos());
        maxEnd = Math.max(maxEnd, o.startNanos() / 1e9 + o.latencyS());
      }
    }
    if (minStart == Long.MAX_VALUE) {
      return new long[] {0, 0};
    }
    double t0 = minStart / 1e9;
    int seconds = (int) Math.ceil(maxEnd - t0) + 1;
    long[] tokens = new long[seconds];
    long[] inFlight = new long[seconds];
    for (RequestOutput o : outputs) {
      if (!o.success()) {
        continue;
      }
      double start = o.startNanos() / 1e9 - t0;
      double t = start + o.ttftS();
      bump(tokens, t);
      for (double gap : o.itlS()) {
        t += gap;
        bump(tokens, t);
      }
      int last = (int) (start + o.latencyS());
      for (int s = (int) start; s <= Math.min(last, seconds - 1); s++) {
        inFlight[s]++;
      }
    }
    long maxTokens = 0;
    long maxInFlight = 0;
    for (int s = 0; s < seconds; s++) {
      maxTokens = Math.max(maxTokens, tokens[s]);
      maxInFlight = Math.max(maxInFlight, inFlight[s]);
    }
    return new long[] {maxTokens, maxInFlight};
  }

  private static void bump(long[] buckets, double t) {
    int s = (int) t;
    if (s >= 0 && s < buckets.length) {
      buckets[s]++;
    }
  }
}
