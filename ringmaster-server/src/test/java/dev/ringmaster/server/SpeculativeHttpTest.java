package dev.ringmaster.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.openai.client.OpenAIClient;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import dev.ringmaster.engine.spec.ServingSpeculation;
import dev.ringmaster.engine.spec.SpeculativeAlgorithm;
import dev.ringmaster.engine.spec.SpeculativeConfig;
import dev.ringmaster.engine.spec.SpeculativePolicy;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/**
 * Speculation behind the OpenAI API: concurrent greedy chat completions through the official SDK
 * answer the same text as a server that does not speculate; the metrics and {@code
 * /get_server_info} report the drafts and the accept length; every KV block comes back.
 */
class SpeculativeHttpTest {
  private static final List<String> QUESTIONS =
      List.of(
          "one two three one two three one two three one two",
          "the union the union the union the union",
          "tell me about the state of the union",
          "a b c d a b c d a b c d a b");

  private static List<String> answers(TestServer s) throws Exception {
    OpenAIClient client = s.openAi();
    try (ExecutorService exec = Executors.newVirtualThreadPerTaskExecutor()) {
      List<Future<String>> fs = new ArrayList<>();
      for (String q : QUESTIONS) {
        fs.add(
            exec.submit(
                () ->
                    client
                        .chat()
                        .completions()
                        .create(
                            ChatCompletionCreateParams.builder()
                                .model(TestServer.MODEL)
                                .addUserMessage(q)
                                .maxCompletionTokens(24)
                                .temperature(0.0)
                                .build())
                        .choices()
                        .getFirst()
                        .message()
                        .content()
                        .orElse("")));
      }
      List<String> out = new ArrayList<>();
      for (Future<String> f : fs) {
        out.add(f.get());
      }
      return out;
    } finally {
      client.close();
    }
  }

  @Test
  void speculatingServerAnswersAsThePlainOneAndReportsItsDrafts() throws Exception {
    List<String> plain;
    try (TestServer s = TestServer.start()) {
      plain = answers(s);
      JsonNode info = TestServer.json(s.get("/get_server_info").body());
      assertThat(info.get("speculative").get("enabled").asBoolean()).isFalse();
      assertThat(info.get("internal_states").get(0).get("avg_spec_accept_length").isNull())
          .isTrue();
    }
    ServingSpeculation spec =
        new ServingSpeculation(
            SpeculativeConfig.of(SpeculativeAlgorithm.NGRAM, 3), null, SpeculativePolicy.ALWAYS);
    try (TestServer s = TestServer.speculating(spec)) {
      assertThat(answers(s)).containsExactlyElementsOf(plain);
      assertThat(s.metric("ringmaster:spec_draft_tokens_total")).isPositive();
      assertThat(s.metric("ringmaster:spec_accept_length")).isGreaterThanOrEqualTo(1.0);
      assertThat(s.metric("ringmaster:spec_enabled_fraction")).isEqualTo(1.0);
      JsonNode info = TestServer.json(s.get("/get_server_info").body());
      JsonNode sp = info.get("speculative");
      assertThat(sp.get("enabled").asBoolean()).isTrue();
      assertThat(sp.get("algorithm").asText()).isEqualTo("NGRAM");
      assertThat(sp.get("policy").asText()).isEqualTo("always");
      assertThat(sp.get("num_draft_tokens").asInt()).isEqualTo(3);
      assertThat(sp.get("draft_tokens").asLong()).isPositive();
      assertThat(sp.get("acceptance_by_position").size()).isEqualTo(3);
      assertThat(info.get("internal_states").get(0).get("avg_spec_accept_length").asDouble())
          .isEqualTo(sp.get("accept_length").asDouble());
      s.awaitDrained(); // every block back after the prefix cache is flushed
    }
  }
}
