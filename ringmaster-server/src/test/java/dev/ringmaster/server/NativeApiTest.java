package dev.ringmaster.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.ringmaster.engine.Generator;
import dev.ringmaster.engine.SamplingParams;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class NativeApiTest {
  private static TestServer s;

  @BeforeAll
  static void start() {
    s = TestServer.start();
  }

  @AfterAll
  static void stop() {
    s.close();
  }

  private int[] soloGreedy(int[] prompt, int n) {
    SamplingParams p = new SamplingParams(0, 1, 0, 0, n, true, List.of());
    return new Generator(s.lm).generate(prompt, p, new int[] {1}, t -> true).outputIds();
  }

  private static int[] ints(JsonNode a) {
    int[] out = new int[a.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = a.get(i).asInt();
    }
    return out;
  }

  @Test
  void generateFromIdsMatchesTheReferenceGenerator() {
    HttpResponse<String> r =
        s.post(
            "/generate",
            "{\"input_ids\": [5, 6, 7, 8], \"sampling_params\": {\"max_new_tokens\": 6,"
                + " \"temperature\": 0, \"ignore_eos\": true}}");
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    JsonNode j = TestServer.json(r.body());
    assertThat(ints(j.get("output_ids"))).containsExactly(soloGreedy(new int[] {5, 6, 7, 8}, 6));
    JsonNode meta = j.get("meta_info");
    assertThat(meta.get("prompt_tokens").asInt()).isEqualTo(4);
    assertThat(meta.get("completion_tokens").asInt()).isEqualTo(6);
    assertThat(meta.get("finish_reason").get("type").asText()).isEqualTo("length");
    assertThat(meta.get("e2e_latency").asDouble()).isPositive();
    assertThat(j.get("text").asText())
        .isEqualTo(
            s.server
                .context()
                .model()
                .tokenizer()
                .decode(soloGreedy(new int[] {5, 6, 7, 8}, 6), true));
  }

  @Test
  void generateBatchOfTextsReturnsAList() {
    HttpResponse<String> r =
        s.post(
            "/generate",
            "{\"text\": [\"hello\", \"the union\"], \"sampling_params\": {\"max_new_tokens\": 3,"
                + " \"temperature\": 0}, \"return_logprob\": true}");
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    JsonNode j = TestServer.json(r.body());
    assertThat(j.isArray()).isTrue();
    assertThat(j.size()).isEqualTo(2);
    for (JsonNode e : j) {
      assertThat(e.get("meta_info").get("output_token_logprobs").size())
          .isEqualTo(e.get("output_ids").size());
    }
  }

  @Test
  void generateStreamsCumulativeTextInSseFraming() {
    HttpResponse<String> r =
        s.post(
            "/generate",
            "{\"input_ids\": [9, 10, 11], \"stream\": true, \"sampling_params\":"
                + " {\"max_new_tokens\": 8, \"temperature\": 0, \"ignore_eos\": true}}");
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    assertThat(r.headers().firstValue("content-type").orElse("")).startsWith("text/event-stream");
    List<JsonNode> events = sseEvents(r.body());
    JsonNode last = events.getLast();
    assertThat(ints(last.get("output_ids"))).containsExactly(soloGreedy(new int[] {9, 10, 11}, 8));
    assertThat(last.get("meta_info").get("finish_reason").get("type").asText()).isEqualTo("length");
    String prev = "";
    for (JsonNode e : events) {
      assertThat(e.get("text").asText()).startsWith(prev);
      prev = e.get("text").asText();
    }
  }

  /**
   * As SGLang's, the stream has one event per token, also for tokens whose text is held back: here
   * every token is forced (logit bias) to be the first byte of a three-byte UTF-8 character, so no
   * text appears before the end, and still each token arrives in its own event with its id.
   */
  @Test
  void generateStreamsAnEventPerTokenEvenWithoutText() {
    var tokenizer = s.server.context().model().tokenizer();
    int lead = -1;
    int vocab = Math.min(tokenizer.vocabSize(), s.lm.config().vocabSize());
    for (int id = 0; id < vocab && lead < 0; id++) {
      byte[] b = tokenizer.tokenBytes(id);
      if (b != null && b.length == 1 && (b[0] & 0xF0) == 0xE0) {
        lead = id;
      }
    }
    assertThat(lead).as("a byte-level token for a UTF-8 lead byte").isNotNegative();
    HttpResponse<String> r =
        s.post(
            "/generate",
            "{\"input_ids\": [9, 10, 11], \"stream\": true, \"sampling_params\":"
                + " {\"max_new_tokens\": 5, \"temperature\": 0, \"ignore_eos\": true,"
                + " \"logit_bias\": {\""
                + lead
                + "\": 100}}}");
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    List<JsonNode> events = sseEvents(r.body());
    assertThat(events).hasSize(6); // five tokens, then the final event
    for (int i = 0; i < 5; i++) {
      JsonNode e = events.get(i);
      assertThat(e.get("text").asText()).as("event %d", i).isEmpty();
      assertThat(ints(e.get("output_ids"))).hasSize(i + 1).containsOnly(lead);
      assertThat(e.get("meta_info").get("completion_tokens").asInt()).isEqualTo(i + 1);
      assertThat(e.get("meta_info").get("finish_reason").isNull()).isTrue();
    }
    JsonNode last = events.getLast();
    assertThat(last.get("meta_info").get("finish_reason").get("type").asText()).isEqualTo("length");
    assertThat(last.get("text").asText()).isNotEmpty(); // the held-back bytes, flushed
  }

  /** Parses an SSE body strictly: every event is "data: ..." plus a blank line; ends in [DONE]. */
  static List<JsonNode> sseEvents(String body) {
    assertThat(body).endsWith("data: [DONE]\n\n");
    List<JsonNode> out = new ArrayList<>();
    for (String block : body.split("\n\n")) {
      assertThat(block).startsWith("data: ");
      assertThat(block).doesNotContain("\n");
      String data = block.substring("data: ".length());
      if (!data.equals("[DONE]")) {
        out.add(TestServer.json(data));
      }
    }
    return out;
  }

  @Test
  void tokenizeAndDetokenizeRoundTrip() {
    HttpResponse<String> r = s.post("/tokenize", "{\"text\": \"the union is strong\"}");
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    JsonNode j = TestServer.json(r.body());
    assertThat(j.get("count").asInt()).isEqualTo(j.get("tokens").size()).isPositive();
    assertThat(j.get("max_model_len").asInt()).isEqualTo(256);
    HttpResponse<String> d =
        s.post("/detokenize", "{\"tokens\": " + j.get("tokens").toString() + "}");
    assertThat(d.statusCode()).isEqualTo(200);
    assertThat(TestServer.json(d.body()).get("text").asText()).isEqualTo("the union is strong");
  }

  @Test
  void healthEndpointsAndServerInfo() {
    assertThat(s.get("/health").statusCode()).isEqualTo(200);
    assertThat(s.get("/health_generate").statusCode()).isEqualTo(200);
    HttpResponse<String> info = s.get("/get_server_info");
    assertThat(info.statusCode()).isEqualTo(200);
    JsonNode j = TestServer.json(info.body());
    assertThat(j.get("served_model_name").asText()).isEqualTo(TestServer.MODEL);
    assertThat(j.get("memory").get("weights_bytes").asLong()).isPositive();
    assertThat(j.get("memory").get("kv_cache_bytes").asLong()).isPositive();
    assertThat(j.get("kv_cache").get("max_total_num_tokens").asLong()).isEqualTo(16 * 1024);
    JsonNode models = TestServer.json(s.get("/v1/models").body());
    assertThat(models.get("data").get(0).get("id").asText()).isEqualTo(TestServer.MODEL);
  }

  @Test
  void metricsUseTheRingmasterPrefixInPrometheusText() {
    s.post("/generate", "{\"input_ids\": [3], \"sampling_params\": {\"max_new_tokens\": 2}}");
    HttpResponse<String> m = s.get("/metrics");
    assertThat(m.statusCode()).isEqualTo(200);
    assertThat(m.headers().firstValue("content-type").orElse("")).startsWith("text/plain");
    assertThat(m.body())
        .contains("ringmaster:prompt_tokens_total{model_name=\"tiny-moe\"}")
        .contains("ringmaster:generation_tokens_total")
        .contains("ringmaster:time_to_first_token_seconds_bucket")
        .contains("ringmaster:inter_token_latency_seconds_bucket")
        .contains("ringmaster:e2e_request_latency_seconds_count")
        .contains("ringmaster:num_running_reqs")
        .contains("ringmaster:num_queue_reqs")
        .contains("ringmaster:token_usage");
  }
}
