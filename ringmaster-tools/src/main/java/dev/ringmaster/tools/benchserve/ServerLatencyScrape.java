package dev.ringmaster.tools.benchserve;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The server's own account of time to first token, from its Prometheus {@code /metrics} scraped
 * before and after the timed requests: the mean of each TTFT histogram over just those requests
 * (the difference of the two scrapes' sums over that of their counts). Reads the names Ringmaster
 * and SGLang export, whatever their prefix: {@code time_to_first_token_seconds}, {@code
 * queue_time_seconds} and {@code per_stage_req_latency_seconds} by stage, plus Ringmaster's {@code
 * prefill_steps_total}.
 */
final class ServerLatencyScrape {
  private static final Duration TIMEOUT = Duration.ofSeconds(30);
  private static final String STAGES = "per_stage_req_latency_seconds";

  private ServerLatencyScrape() {}

  /**
   * Sums and counts by series name ({@code ttft}, {@code queue_time}, a stage's name, or {@code
   * prefill_steps}), summed over other labels; empty when the server has no {@code /metrics}.
   */
  static Map<String, double[]> scrape(HttpClient http, String baseUrl, String apiKey)
      throws InterruptedException {
    HttpRequest.Builder b =
        HttpRequest.newBuilder(URI.create(baseUrl + "/metrics")).timeout(TIMEOUT).GET();
    ApiKey.authorize(b, apiKey);
    try {
      HttpResponse<String> r = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
      return r.statusCode() == 200 ? parse(r.body()) : Map.of();
    } catch (IOException e) {
      return Map.of(); // not every server exports metrics (SGLang only with --enable-metrics)
    }
  }

  /** The series of a Prometheus text exposition this class reads. */
  static Map<String, double[]> parse(String text) {
    Map<String, double[]> out = new LinkedHashMap<>();
    for (String line : text.split("\n")) {
      if (line.isEmpty() || line.startsWith("#")) {
        continue;
      }
      int brace = line.indexOf('{');
      int space = line.lastIndexOf(' ');
      if (space < 0) {
        continue;
      }
      String name = line.substring(0, brace >= 0 ? brace : space).strip();
      String labels = brace >= 0 ? line.substring(brace, line.indexOf('}', brace) + 1) : "";
      double value;
      try {
        value = Double.parseDouble(line.substring(space + 1).strip());
      } catch (NumberFormatException e) {
        continue;
      }
      int slot = name.endsWith("_sum") ? 0 : name.endsWith("_count") ? 1 : -1;
      if (name.endsWith(":prefill_steps_total")) {
        out.computeIfAbsent("prefill_steps", k -> new double[2])[0] += value;
        continue;
      }
      if (slot < 0) {
        continue;
      }
      String family = name.substring(0, name.lastIndexOf('_'));
      String key;
      if (family.endsWith(":time_to_first_token_seconds")) {
        key = "ttft";
      } else if (family.endsWith(":queue_time_seconds")) {
        key = "queue_time";
      } else if (family.endsWith(":" + STAGES)) {
        key = label(labels, "stage");
        if (key == null) {
          continue;
        }
      } else {
        continue;
      }
      out.computeIfAbsent(key, k -> new double[2])[slot] += value;
    }
    return out;
  }

  private static String label(String labels, String name) {
    String at = name + "=\"";
    int i = labels.indexOf(at);
    if (i < 0) {
      return null;
    }
    int start = i + at.length();
    return labels.substring(start, labels.indexOf('"', start));
  }

  /**
   * The mean milliseconds of every series that counted requests between the scrapes, and {@code
   * prefill_steps_per_request}; null when no series did.
   */
  static ObjectNode breakdown(Map<String, double[]> before, Map<String, double[]> after) {
    ObjectNode o = RequestBodies.JSON.createObjectNode();
    double prefills = 0;
    List<Map.Entry<String, double[]>> series = new ArrayList<>(after.entrySet());
    series.sort(Comparator.comparingInt(e -> order(e.getKey())));
    for (Map.Entry<String, double[]> e : series) {
      if (e.getKey().equals("prefill_steps")) {
        continue;
      }
      double[] a = e.getValue();
      double[] b = before.getOrDefault(e.getKey(), new double[2]);
      double count = a[1] - b[1];
      if (count > 0) {
        o.put(e.getKey(), (a[0] - b[0]) / count * 1000);
        if (e.getKey().equals("prefill_forward")) {
          prefills = count;
        }
      }
    }
    if (o.isEmpty()) {
      return null;
    }
    double[] steps = after.get("prefill_steps");
    if (steps != null && prefills > 0) {
      double[] b = before.getOrDefault("prefill_steps", new double[2]);
      o.put("prefill_steps_per_request", (steps[0] - b[0]) / prefills);
    }
    return o;
  }

  /** Known series in the order a request passes them; others after, as they came. */
  private static int order(String key) {
    int i = ORDER.indexOf(key);
    return i < 0 ? ORDER.size() : i;
  }

  private static final List<String> ORDER =
      List.of(
          "ttft",
          "request_process",
          "queue_time",
          "prefill_waiting",
          "prefill_forward",
          "first_token_emit");

  /** The breakdown's section of the summary table. */
  static String table(ObjectNode breakdown) {
    StringBuilder sb = new StringBuilder();
    sb.append(ResultReport.centered("Server TTFT Breakdown (means)", '-')).append('\n');
    for (var e : breakdown.properties()) {
      String name =
          e.getKey().equals("prefill_steps_per_request")
              ? "Server prefill steps per request:"
              : "Server " + e.getKey() + " (ms):";
      sb.append(String.format(Locale.ROOT, "%-40s %-10.2f\n", name, e.getValue().asDouble()));
    }
    return sb.toString();
  }
}
