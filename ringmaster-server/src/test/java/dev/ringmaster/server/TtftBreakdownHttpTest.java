package dev.ringmaster.server;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.http.HttpResponse;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The time-to-first-token breakdown in {@code /metrics}: {@code queue_time_seconds} and {@code
 * per_stage_req_latency_seconds} by stage, over a model whose every forward takes at least {@link
 * #FORWARD_MS}, so the prefill stage is known to hold it and the others are known not to.
 */
class TtftBreakdownHttpTest {
  private static final long FORWARD_MS = 40;
  private static TestServer s;

  @BeforeAll
  static void start() {
    s =
        TestServer.start(
            TestServer.slow(FORWARD_MS), ServerConfig.defaults(), TestServer.defaultBatch());
  }

  @AfterAll
  static void stop() {
    s.close();
  }

  private static final String STAGE = "ringmaster:per_stage_req_latency_seconds";

  /** One series of the Prometheus text, by metric name and stage label (null: no stage). */
  private static double series(String body, String name, String stage) {
    for (String line : body.split("\n")) {
      if (line.startsWith(name + "{")
          && (stage == null || line.contains("stage=\"" + stage + "\""))) {
        return Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
      }
    }
    throw new AssertionError(name + " " + stage + " not exported");
  }

  @Test
  void streamedRequestsReportEveryStageOfTheirFirstToken() {
    int requests = 3;
    for (int i = 0; i < requests; i++) {
      HttpResponse<String> r =
          i == 1
              ? s.post(
                  "/v1/completions",
                  "{\"model\": \"tiny-moe\", \"prompt\": [5, 6, 7], \"max_tokens\": 3,"
                      + " \"stream\": true, \"temperature\": 0}")
              : s.post(
                  "/generate",
                  "{\"input_ids\": [5, 6, 7, 8], \"stream\": true, \"sampling_params\":"
                      + " {\"max_new_tokens\": 3, \"temperature\": 0, \"ignore_eos\": true}}");
      assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    }
    String m = s.get("/metrics").body();
    for (String stage :
        java.util.List.of("request_process", "prefill_waiting", "prefill_forward")) {
      assertThat(series(m, STAGE + "_count", stage)).as(stage).isEqualTo(requests);
    }
    // The 3-token answers are streamed chunk by chunk: each first token is written, and timed.
    assertThat(series(m, STAGE + "_count", "first_token_emit")).isEqualTo(requests);
    double ttft = series(m, "ringmaster:time_to_first_token_seconds_sum", null);
    double waiting = series(m, STAGE + "_sum", "prefill_waiting");
    double forward = series(m, STAGE + "_sum", "prefill_forward");
    assertThat(series(m, "ringmaster:queue_time_seconds_sum", null)).isEqualTo(waiting);
    // Each prefill ran one step of at least FORWARD_MS; nothing else waits for the model here.
    assertThat(forward).isGreaterThanOrEqualTo(requests * FORWARD_MS / 1000.0);
    assertThat(waiting).isLessThan(forward);
    assertThat(series(m, "ringmaster:prefill_steps_total", null)).isEqualTo(requests);
    // The engine's stages end where the server's TTFT ends (the token reaching its listener).
    assertThat(waiting + forward).isLessThanOrEqualTo(ttft).isGreaterThan(0.9 * ttft);
    assertThat(series(m, STAGE + "_sum", "first_token_emit")).isLessThan(forward);
    assertThat(m).containsPattern("ringmaster:time_to_first_token_seconds_bucket\\{.*le=\"0.045\"");
  }
}
