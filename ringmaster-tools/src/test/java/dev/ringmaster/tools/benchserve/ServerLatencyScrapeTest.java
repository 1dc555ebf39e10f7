package dev.ringmaster.tools.benchserve;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The server's TTFT breakdown from two scrapes of its Prometheus text, Ringmaster's or SGLang's.
 */
class ServerLatencyScrapeTest {
  private static String exposition(double ttftSum, int n, double forwardSum, int steps) {
    return "# HELP ringmaster:time_to_first_token_seconds Time to first token.\n"
        + "# TYPE ringmaster:time_to_first_token_seconds histogram\n"
        + "ringmaster:time_to_first_token_seconds_bucket{model_name=\"m\",le=\"0.01\"} 0\n"
        + "ringmaster:time_to_first_token_seconds_count{model_name=\"m\"} "
        + n
        + "\n"
        + "ringmaster:time_to_first_token_seconds_sum{model_name=\"m\"} "
        + ttftSum
        + "\n"
        + "ringmaster:per_stage_req_latency_seconds_count{model_name=\"m\",stage=\"prefill_forward\"} "
        + n
        + "\n"
        + "ringmaster:per_stage_req_latency_seconds_sum{model_name=\"m\",stage=\"prefill_forward\"} "
        + forwardSum
        + "\n"
        + "ringmaster:per_stage_req_latency_seconds_count{model_name=\"m\",stage=\"first_token_emit\"} 0\n"
        + "ringmaster:per_stage_req_latency_seconds_sum{model_name=\"m\",stage=\"first_token_emit\"} 0\n"
        + "ringmaster:prefill_steps_total{model_name=\"m\"} "
        + steps
        + "\n"
        + "ringmaster:num_requests_total{model_name=\"m\"} "
        + n
        + "\n";
  }

  @Test
  void meansCoverOnlyTheRequestsBetweenTheScrapes() {
    Map<String, double[]> before = ServerLatencyScrape.parse(exposition(1.0, 10, 0.5, 10));
    Map<String, double[]> after = ServerLatencyScrape.parse(exposition(1.3, 20, 0.72, 30));
    ObjectNode b = ServerLatencyScrape.breakdown(before, after);
    assertThat(b.get("ttft").asDouble()).isCloseTo(30.0, within(1e-9)); // 0.3 s over 10
    assertThat(b.get("prefill_forward").asDouble()).isCloseTo(22.0, within(1e-9));
    assertThat(b.get("prefill_steps_per_request").asDouble()).isCloseTo(2.0, within(1e-9));
    assertThat(b.has("first_token_emit")).as("no request counted").isFalse();
    assertThat(ServerLatencyScrape.table(b))
        .contains("Server ttft (ms):                        30.00")
        .contains("Server prefill steps per request:        2.00");
  }

  @Test
  void sglangNamesAndLabelsAreRead() {
    String text =
        "sglang:time_to_first_token_seconds_sum{model_name=\"x\",tp_rank=\"0\"} 2.0\n"
            + "sglang:time_to_first_token_seconds_count{model_name=\"x\",tp_rank=\"0\"} 4\n"
            + "sglang:queue_time_seconds_sum{tp_rank=\"0\"} 0.4\n"
            + "sglang:queue_time_seconds_count{tp_rank=\"0\"} 4\n"
            + "sglang:per_stage_req_latency_seconds_sum{stage=\"prefill_forward\",tp_rank=\"0\"} 1\n"
            + "sglang:per_stage_req_latency_seconds_count{stage=\"prefill_forward\",tp_rank=\"0\"} 4\n";
    ObjectNode b = ServerLatencyScrape.breakdown(Map.of(), ServerLatencyScrape.parse(text));
    assertThat(b.get("ttft").asDouble()).isCloseTo(500.0, within(1e-9));
    assertThat(b.get("queue_time").asDouble()).isCloseTo(100.0, within(1e-9));
    assertThat(b.get("prefill_forward").asDouble()).isCloseTo(250.0, within(1e-9));
    assertThat(ServerLatencyScrape.breakdown(Map.of(), Map.of())).isNull();
  }
}
