package dev.ringmaster.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.http.HttpResponse;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@code /v1/models/{id}}, {@code /get_model_info}, {@code /server_info}, {@code /get_server_info},
 * {@code /abort_request} and {@code /version} in the shapes OpenAI and SGLang clients read.
 */
class SglangEndpointsTest {
  private static TestServer s;

  @BeforeAll
  static void start() {
    s = TestServer.start(TestServer.slow(10), ServerConfig.defaults(), TestServer.defaultBatch());
  }

  @AfterAll
  static void stop() {
    s.close();
  }

  @Test
  void retrievesTheModelAnd404sOthers() {
    HttpResponse<String> r = s.get("/v1/models/" + TestServer.MODEL);
    assertThat(r.statusCode()).isEqualTo(200);
    JsonNode m = TestServer.json(r.body());
    assertThat(m.get("id").asText()).isEqualTo(TestServer.MODEL);
    assertThat(m.get("object").asText()).isEqualTo("model");
    assertThat(m.has("created")).isTrue();
    assertThat(m.get("owned_by").asText()).isNotBlank();
    BadInputTest.assertError(s.get("/v1/models/gpt-9"), 404, "model");
  }

  @Test
  void modelInfoAndVersion() {
    JsonNode info = TestServer.json(s.get("/get_model_info").body());
    assertThat(info.get("model_path").asText()).isEqualTo(TestServer.modelDir().toString());
    assertThat(info.get("tokenizer_path").asText()).isNotBlank();
    assertThat(info.get("is_generation").asBoolean()).isTrue();
    JsonNode v = TestServer.json(s.get("/version").body());
    assertThat(v.get("version").asText()).isEqualTo(ServerVersion.VERSION);
  }

  @Test
  void serverInfoHasInternalStatesAsBenchServingReadsThem() {
    assertThat(
            s.post(
                    "/generate",
                    "{\"input_ids\": [5, 6], \"sampling_params\": {\"max_new_tokens\": 4}}")
                .statusCode())
        .isEqualTo(200);
    for (String path : new String[] {"/server_info", "/get_server_info"}) {
      HttpResponse<String> r = s.get(path);
      assertThat(r.statusCode()).isEqualTo(200);
      JsonNode j = TestServer.json(r.body());
      JsonNode states = j.get("internal_states");
      assertThat(states.isArray()).isTrue();
      assertThat(states).isNotEmpty();
      JsonNode first = states.get(0);
      assertThat(first.get("last_gen_throughput").asDouble()).isPositive();
      assertThat(
              first.path("avg_spec_accept_length").isMissingNode()
                  || first.get("avg_spec_accept_length").isNull())
          .isTrue();
      assertThat(j.get("version").asText()).isEqualTo(ServerVersion.VERSION);
      assertThat(j.get("max_total_num_tokens").asLong()).isPositive();
    }
  }

  @Test
  void stepHostTimeIsExportedInServerInfoAndMetrics() {
    assertThat(
            s.post(
                    "/generate",
                    "{\"input_ids\": [5, 6], \"sampling_params\": {\"max_new_tokens\": 6,"
                        + " \"ignore_eos\": true}}")
                .statusCode())
        .isEqualTo(200);
    JsonNode st = TestServer.json(s.get("/get_server_info").body()).get("internal_states").get(0);
    assertThat(st.get("overlap_schedule").asBoolean()).isTrue();
    assertThat(st.get("steps").asLong()).isGreaterThanOrEqualTo(6);
    assertThat(st.get("overlapped_steps").asLong()).isPositive();
    assertThat(st.get("avg_forward_time_per_step_ms").asDouble()).isPositive();
    assertThat(st.get("avg_host_time_per_step_ms").asDouble()).isGreaterThanOrEqualTo(0);
    assertThat(st.get("host_time_share").asDouble()).isBetween(0.0, 1.0);
    assertThat(st.get("max_running_requests").asInt())
        .isEqualTo(s.engine.config().maxRunningRequests());
    assertThat(st.get("chunked_prefill_size").asInt())
        .isEqualTo(s.engine.config().chunkedPrefillSize());
    assertThat(s.metric("ringmaster:engine_steps_total")).isGreaterThanOrEqualTo(6);
    assertThat(s.metric("ringmaster:step_forward_seconds_total")).isPositive();
    assertThat(s.metric("ringmaster:step_host_seconds_total")).isPositive();
    assertThat(s.metric("ringmaster:step_build_seconds_total")).isPositive();
    assertThat(s.metric("ringmaster:step_host_time_share")).isBetween(0.0, 1.0);
    s.metric("ringmaster:step_host_time_ms");
    s.metric("ringmaster:engine_overlapped_steps_total");
  }

  @Test
  void abortRequestStopsThatRequest() throws Exception {
    CompletableFuture<HttpResponse<String>> running =
        CompletableFuture.supplyAsync(
            () ->
                s.post(
                    "/generate",
                    "{\"input_ids\": [5, 6], \"rid\": \"job-7\", \"sampling_params\":"
                        + " {\"max_new_tokens\": 200, \"ignore_eos\": true}}"));
    while (s.engine.stats().running() == 0) {
      Thread.sleep(5);
    }
    HttpResponse<String> abort = s.post("/abort_request", "{\"rid\": \"job-7\"}");
    assertThat(abort.statusCode()).isEqualTo(200);
    HttpResponse<String> r = running.get(30, TimeUnit.SECONDS);
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    JsonNode meta = TestServer.json(r.body()).get("meta_info");
    assertThat(meta.get("finish_reason").get("type").asText()).isEqualTo("abort");
    assertThat(meta.get("completion_tokens").asInt()).isLessThan(200);
    assertThat(s.post("/abort_request", "{\"rid\": \"no-such\"}").statusCode()).isEqualTo(200);
    BadInputTest.assertError(s.post("/abort_request", "{}"), 400, "rid");
  }
}
