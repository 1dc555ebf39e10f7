package dev.ringmaster.tools.benchserve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.List;
import java.util.Locale;

/** sglang.bench_serving's summary table and its JSON result line, with the same names. */
public final class ResultReport {
  private static final int WIDTH = 50;

  private ResultReport() {}

  /** The request rate as sglang prints it: {@code inf}, or the number as Python shows a float. */
  static String rateText(double rate) {
    return Double.isInfinite(rate) ? "inf" : Double.toString(rate);
  }

  /** The summary table, as sglang.bench_serving prints it. */
  public static String table(BenchServeResult r) {
    ServingMetrics m = r.metrics();
    StringBuilder sb = new StringBuilder();
    sb.append('\n').append(centered(" Serving Benchmark Result ", '=')).append('\n');
    row(sb, "Backend:", r.config().target().backendName());
    row(sb, "Traffic request rate:", rateText(r.config().load().requestRate()));
    Integer mc = r.config().load().maxConcurrency();
    row(sb, "Max request concurrency:", mc == null ? "not set" : mc.toString());
    row(sb, "Successful requests:", Integer.toString(m.completed()));
    row(sb, "Benchmark duration (s):", m.durationS());
    row(sb, "Total input tokens:", Long.toString(m.totalInput()));
    row(sb, "Total input text tokens:", Long.toString(m.totalInput()));
    row(sb, "Total input vision tokens:", "0");
    row(sb, "Total generated tokens:", Long.toString(m.totalOutput()));
    row(sb, "Total generated tokens (retokenized):", Long.toString(m.totalOutputRetokenized()));
    row(sb, "Request throughput (req/s):", m.requestThroughput());
    row(sb, "Input token throughput (tok/s):", m.inputThroughput());
    row(sb, "Output token throughput (tok/s):", m.outputThroughput());
    row(sb, "Peak output token throughput (tok/s):", m.maxOutputTokensPerS());
    row(sb, "Peak concurrent requests:", Integer.toString(m.maxConcurrentRequests()));
    row(sb, "Total token throughput (tok/s):", m.totalThroughput());
    row(sb, "Concurrency:", m.concurrency());
    if (r.acceptLength() != null && r.acceptLength() > 0) {
      row(sb, "Accept length:", r.acceptLength());
    }
    sb.append(centered("End-to-End Latency", '-')).append('\n');
    row(sb, "Mean E2E Latency (ms):", m.e2e().mean());
    row(sb, "Median E2E Latency (ms):", m.e2e().median());
    sb.append(centered("Time to First Token", '-')).append('\n');
    row(sb, "Mean TTFT (ms):", m.ttft().mean());
    row(sb, "Median TTFT (ms):", m.ttft().median());
    row(sb, "P99 TTFT (ms):", m.ttft().percentile(99));
    if (m.ttftFirstToken().count() > 0) {
      row(sb, "Mean TTFT, any token (ms):", m.ttftFirstToken().mean());
      row(sb, "Median TTFT, any token (ms):", m.ttftFirstToken().median());
      row(sb, "P99 TTFT, any token (ms):", m.ttftFirstToken().percentile(99));
    }
    if (r.serverTtft() != null) {
      sb.append(ServerLatencyScrape.table(r.serverTtft()));
    }
    sb.append(centered("Time per Output Token (excl. 1st token)", '-')).append('\n');
    row(sb, "Mean TPOT (ms):", m.tpot().mean());
    row(sb, "Median TPOT (ms):", m.tpot().median());
    row(sb, "P99 TPOT (ms):", m.tpot().percentile(99));
    sb.append(centered("Inter-Token Latency", '-')).append('\n');
    row(sb, "Mean ITL (ms):", m.itl().mean());
    row(sb, "Median ITL (ms):", m.itl().median());
    row(sb, "P95 ITL (ms):", m.itl().percentile(95));
    row(sb, "P99 ITL (ms):", m.itl().percentile(99));
    row(sb, "Max ITL (ms):", m.itl().max());
    sb.append("=".repeat(WIDTH)).append('\n');
    return sb.toString();
  }

  /**
   * The result line: sglang.bench_serving's keys in its order ({@code request_rate} is the string
   * {@code "inf"} for an infinite rate, which JSON cannot hold as a number), then {@code
   * num_prompts}, {@code failed}, {@code max_itl_ms} and {@code
   * mean/median/p99_ttft_first_token_ms} (null where the API streams no token ids).
   */
  public static ObjectNode json(BenchServeResult r) {
    BenchServeConfig c = r.config();
    ServingMetrics m = r.metrics();
    ObjectNode o = RequestBodies.JSON.createObjectNode();
    if (c.tag() == null) {
      o.putNull("tag");
    } else {
      o.put("tag", c.tag());
    }
    o.put("backend", c.target().backendName());
    o.put("dataset_name", c.dataset().name());
    if (Double.isInfinite(c.load().requestRate())) {
      o.put("request_rate", "inf");
    } else {
      o.put("request_rate", c.load().requestRate());
    }
    putInt(o, "max_concurrency", c.load().maxConcurrency());
    putInt(o, "sharegpt_output_len", c.dataset().sharegptOutputLen());
    o.put("random_input_len", c.dataset().randomInputLen());
    o.put("random_output_len", c.dataset().randomOutputLen());
    o.put("random_range_ratio", c.dataset().randomRangeRatio());
    o.set("server_info", r.serverInfo() == null ? o.nullNode() : r.serverInfo());
    o.put("duration", m.durationS());
    o.put("completed", m.completed());
    o.put("total_input_tokens", m.totalInput());
    o.put("total_input_text_tokens", m.totalInput());
    o.put("total_input_vision_tokens", 0);
    o.put("total_output_tokens", m.totalOutput());
    o.put("total_output_tokens_retokenized", m.totalOutputRetokenized());
    o.put("request_throughput", m.requestThroughput());
    o.put("input_throughput", m.inputThroughput());
    o.put("output_throughput", m.outputThroughput());
    o.put("total_throughput", m.totalThroughput());
    stats(o, "e2e_latency_ms", m.e2e(), false);
    stats(o, "ttft_ms", m.ttft(), false);
    stats(o, "tpot_ms", m.tpot(), false);
    stats(o, "itl_ms", m.itl(), true);
    o.put("concurrency", m.concurrency());
    if (r.acceptLength() == null) {
      o.putNull("accept_length");
    } else {
      o.put("accept_length", r.acceptLength());
    }
    o.put("max_output_tokens_per_s", m.maxOutputTokensPerS());
    o.put("max_concurrent_requests", m.maxConcurrentRequests());
    o.put("num_prompts", r.rows().size());
    o.put("failed", r.rows().size() - m.completed());
    o.put("max_itl_ms", m.itl().max());
    if (m.ttftFirstToken().count() > 0) {
      o.put("mean_ttft_first_token_ms", m.ttftFirstToken().mean());
      o.put("median_ttft_first_token_ms", m.ttftFirstToken().median());
      o.put("p99_ttft_first_token_ms", m.ttftFirstToken().percentile(99));
    } else {
      o.putNull("mean_ttft_first_token_ms");
      o.putNull("median_ttft_first_token_ms");
      o.putNull("p99_ttft_first_token_ms");
    }
    o.set("server_ttft_breakdown_ms", r.serverTtft() == null ? o.nullNode() : r.serverTtft());
    if (c.outputDetails()) {
      details(o, r);
    }
    return o;
  }

  private static void details(ObjectNode o, BenchServeResult r) {
    ArrayNode in = o.putArray("input_lens");
    ArrayNode out = o.putArray("output_lens");
    ArrayNode ttfts = o.putArray("ttfts");
    ArrayNode firstTokens = o.putArray("ttfts_first_token");
    ArrayNode itls = o.putArray("itls");
    ArrayNode texts = o.putArray("generated_texts");
    ArrayNode errors = o.putArray("errors");
    List<RequestOutput> outputs = r.outputs();
    for (int i = 0; i < outputs.size(); i++) {
      RequestOutput q = outputs.get(i);
      in.add(r.rows().get(i).promptLen());
      out.add(q.success() ? q.outputLen() : 0);
      ttfts.add(q.ttftS());
      if (Double.isNaN(q.ttftFirstTokenS())) {
        firstTokens.addNull();
      } else {
        firstTokens.add(q.ttftFirstTokenS());
      }
      ArrayNode a = itls.addArray();
      for (double v : q.itlS()) {
        a.add(v);
      }
      texts.add(q.generatedText());
      errors.add(q.error());
    }
  }

  private static void stats(ObjectNode o, String name, Percentiles p, boolean p95) {
    o.put("mean_" + name, p.mean());
    o.put("median_" + name, p.median());
    o.put("std_" + name, p.std());
    if (p95) {
      o.put("p95_" + name, p.percentile(95));
    }
    o.put("p99_" + name, p.percentile(99));
  }

  private static void putInt(ObjectNode o, String key, Integer v) {
    if (v == null) {
      o.putNull(key);
    } else {
      o.put(key, v);
    }
  }

  /** {@code s} centred in a line of {@code fill}, the extra fill character on the right. */
  static String centered(String s, char fill) {
    int pad = Math.max(WIDTH - s.length(), 0);
    int left = pad / 2;
    return String.valueOf(fill).repeat(left) + s + String.valueOf(fill).repeat(pad - left);
  }

  private static void row(StringBuilder sb, String name, String value) {
    sb.append(String.format(Locale.ROOT, "%-40s %-10s\n", name, value));
  }

  private static void row(StringBuilder sb, String name, double value) {
    sb.append(String.format(Locale.ROOT, "%-40s %-10.2f\n", name, value));
  }

  /** The server's reported speculative accept length, if it reports one (sglang's key). */
  static Double acceptLength(JsonNode serverInfo) {
    if (serverInfo == null) {
      return null;
    }
    JsonNode info = serverInfo.has("decode") ? serverInfo.path("decode").path(0) : serverInfo;
    JsonNode a = info.path("internal_states").path(0).path("avg_spec_accept_length");
    return a.isNumber() ? a.asDouble() : null;
  }
}
