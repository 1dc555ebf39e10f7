package dev.ringmaster.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.ringmaster.engine.Generator;
import dev.ringmaster.engine.SamplingParams;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Many concurrent streaming clients with mixed prompt lengths: every stream completes, greedy
 * outputs equal the single-sequence reference, KV blocks all return, and the metrics add up.
 */
class ConcurrencyTest {
  private static final int CLIENTS = 36;
  private static TestServer s;

  @BeforeAll
  static void start() {
    // Small prefill chunks so long prompts are split and mixed with other requests' decodes.
    s =
        TestServer.start(
            lm -> lm,
            ServerConfig.defaults(),
            new dev.ringmaster.engine.batch.BatchConfig(64, 256, 32, 16, 1024));
  }

  @AfterAll
  static void stop() {
    s.close();
  }

  private record Job(int[] prompt, int maxTokens, boolean nativeApi) {}

  private record Outcome(int[] ids, String text, int promptTokens, int completionTokens) {}

  private static int[] solo(int[] prompt, int n) {
    SamplingParams p = new SamplingParams(0, 1, 0, 0, n, true, List.of());
    return new Generator(s.lm).generate(prompt, p, new int[] {1}, t -> true).outputIds();
  }

  private static String ids(int[] a) {
    return Arrays.stream(a).mapToObj(Integer::toString).collect(Collectors.joining(","));
  }

  private Outcome run(Job j) {
    if (j.nativeApi()) {
      HttpResponse<String> r =
          s.post(
              "/generate",
              "{\"input_ids\": ["
                  + ids(j.prompt())
                  + "], \"stream\": true, \"sampling_params\": {\"max_new_tokens\": "
                  + j.maxTokens()
                  + ", \"temperature\": 0, \"ignore_eos\": true}}");
      assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
      JsonNode last = NativeApiTest.sseEvents(r.body()).getLast();
      JsonNode out = last.get("output_ids");
      int[] got = new int[out.size()];
      for (int i = 0; i < got.length; i++) {
        got[i] = out.get(i).asInt();
      }
      JsonNode meta = last.get("meta_info");
      return new Outcome(
          got,
          last.get("text").asText(),
          meta.get("prompt_tokens").asInt(),
          meta.get("completion_tokens").asInt());
    }
    HttpResponse<String> r =
        s.post(
            "/v1/completions",
            "{\"model\": \"tiny-moe\", \"prompt\": ["
                + ids(j.prompt())
                + "], \"stream\": true, \"stream_options\": {\"include_usage\": true},"
                + " \"max_tokens\": "
                + j.maxTokens()
                + ", \"temperature\": 0, \"ignore_eos\": true}");
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    StringBuilder text = new StringBuilder();
    JsonNode usage = null;
    String finish = null;
    for (JsonNode e : NativeApiTest.sseEvents(r.body())) {
      for (JsonNode c : e.get("choices")) {
        text.append(c.get("text").asText());
        if (!c.get("finish_reason").isNull()) {
          finish = c.get("finish_reason").asText();
        }
      }
      if (e.has("usage")) {
        usage = e.get("usage");
      }
    }
    assertThat(finish).isEqualTo("length");
    assertThat(usage).isNotNull();
    return new Outcome(
        null,
        text.toString(),
        usage.get("prompt_tokens").asInt(),
        usage.get("completion_tokens").asInt());
  }

  @Test
  void concurrentStreamsMatchSoloGreedyAndReleaseEverything() throws Exception {
    SplittableRandom r = new SplittableRandom(2024);
    List<Job> jobs = new ArrayList<>();
    for (int i = 0; i < CLIENTS; i++) {
      int len = i % 6 == 0 ? 100 + r.nextInt(60) : 1 + r.nextInt(40);
      int[] p = new int[len];
      for (int k = 0; k < len; k++) {
        p[k] = 2 + r.nextInt(318);
      }
      jobs.add(new Job(p, 4 + r.nextInt(12), i % 2 == 0));
    }
    double promptBefore = s.metric("ringmaster:prompt_tokens_total");
    double genBefore = s.metric("ringmaster:generation_tokens_total");
    double reqBefore = s.metric("ringmaster:num_requests_total");
    List<Outcome> outcomes = new ArrayList<>();
    try (ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor()) {
      List<Future<Outcome>> fs = new ArrayList<>();
      for (Job j : jobs) {
        fs.add(pool.submit((Callable<Outcome>) () -> run(j)));
      }
      for (Future<Outcome> f : fs) {
        outcomes.add(f.get(120, TimeUnit.SECONDS));
      }
    }
    int promptSum = 0;
    int genSum = 0;
    for (int i = 0; i < jobs.size(); i++) {
      Job j = jobs.get(i);
      Outcome o = outcomes.get(i);
      int[] expected = solo(j.prompt(), j.maxTokens());
      if (o.ids() != null) {
        assertThat(o.ids()).as("client %d", i).containsExactly(expected);
      }
      assertThat(o.text())
          .as("client %d", i)
          .isEqualTo(s.server.context().model().tokenizer().decode(expected, true));
      assertThat(o.promptTokens()).isEqualTo(j.prompt().length);
      assertThat(o.completionTokens()).isEqualTo(j.maxTokens());
      promptSum += o.promptTokens();
      genSum += o.completionTokens();
    }
    s.awaitDrained();
    assertThat(s.engine.pool().used()).isZero();
    assertThat(s.metric("ringmaster:prompt_tokens_total") - promptBefore).isEqualTo(promptSum);
    assertThat(s.metric("ringmaster:generation_tokens_total") - genBefore).isEqualTo(genSum);
    assertThat(s.metric("ringmaster:num_requests_total") - reqBefore).isEqualTo(CLIENTS);
    assertThat(s.metric("ringmaster:num_running_reqs")).isZero();
    assertThat(s.metric("ringmaster:num_queue_reqs")).isZero();
    assertThat(s.metric("ringmaster:token_usage")).isZero();
    assertThat(s.metric("ringmaster:time_to_first_token_seconds_count"))
        .isGreaterThanOrEqualTo(CLIENTS);
  }
}
