package dev.ringmaster.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.openai.client.OpenAIClient;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import java.util.StringJoiner;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The prefix cache over HTTP: a repeated prompt reports its cached tokens in the usage of both
 * endpoints (streaming too), the metrics count them, and {@code POST /flush_cache} gives every
 * block back.
 */
class PrefixCacheHttpTest {
  private static TestServer s;
  private static OpenAIClient client;

  @BeforeAll
  static void start() {
    s = TestServer.start(); // pages of 16 tokens, radix cache on
    client = s.openAi();
  }

  @AfterAll
  static void stop() {
    client.close();
    s.close();
  }

  private static String completion(boolean stream) {
    StringJoiner ids = new StringJoiner(",", "[", "]");
    for (int i = 0; i < 40; i++) {
      ids.add(Integer.toString(3 + (i * 7) % 200));
    }
    return "{\"model\": \""
        + TestServer.MODEL
        + "\", \"prompt\": "
        + ids
        + ", \"max_tokens\": 4, \"temperature\": 0"
        + (stream ? ", \"stream\": true, \"stream_options\": {\"include_usage\": true}" : "")
        + "}";
  }

  private static long cached(JsonNode usage) {
    return usage.get("prompt_tokens_details").get("cached_tokens").asLong();
  }

  @Test
  void repeatedPromptsReportCachedTokensAndFlushGivesEveryBlockBack() throws Exception {
    s.awaitDrained();
    JsonNode first = TestServer.json(s.post("/v1/completions", completion(false)).body());
    assertThat(cached(first.get("usage"))).isZero();
    JsonNode again = TestServer.json(s.post("/v1/completions", completion(false)).body());
    // 40 prompt tokens: the two whole pages before the last token come from the cache.
    assertThat(cached(again.get("usage"))).isEqualTo(32);
    assertThat(again.get("choices").get(0).get("text").asText())
        .isEqualTo(first.get("choices").get(0).get("text").asText());

    String sse = s.post("/v1/completions", completion(true)).body();
    JsonNode usage = null;
    for (String line : sse.split("\n")) {
      if (line.startsWith("data: {") && line.contains("\"usage\"")) {
        usage = TestServer.json(line.substring(6)).get("usage");
      }
    }
    assertThat(usage).isNotNull();
    assertThat(cached(usage)).isEqualTo(32);

    ChatCompletionCreateParams chat =
        ChatCompletionCreateParams.builder()
            .model(TestServer.MODEL)
            .addUserMessage(
                "tell me everything about the state of the union, in order, with every detail")
            .maxCompletionTokens(3)
            .temperature(0.0)
            .build();
    client.chat().completions().create(chat);
    ChatCompletion c = client.chat().completions().create(chat);
    long chatCached =
        c.usage().orElseThrow().promptTokensDetails().orElseThrow().cachedTokens().orElseThrow();
    assertThat(chatCached).isPositive().isLessThan(c.usage().orElseThrow().promptTokens());

    assertThat(s.metric("ringmaster:cached_tokens_total")).isGreaterThanOrEqualTo(64 + chatCached);
    assertThat(s.metric("ringmaster:cache_hit_rate")).isBetween(0.01, 1.0);
    assertThat(s.metric("ringmaster:radix_cache_pages")).isPositive();
    JsonNode info = TestServer.json(s.get("/get_server_info").body()).get("radix_cache");
    assertThat(info.get("enabled").asBoolean()).isTrue();
    assertThat(info.get("cached_pages").asInt()).isPositive();

    s.awaitDrained(); // flushes through the engine as /flush_cache does; check the endpoint too
    JsonNode flushed = TestServer.json(s.post("/flush_cache", "").body());
    assertThat(flushed.get("radix_cache").asBoolean()).isTrue();
    assertThat(flushed.get("cached_pages").asInt()).isZero();
    s.post("/v1/completions", completion(false));
    assertThat(s.metric("ringmaster:radix_cache_pages")).isPositive();
    var r = s.post("/flush_cache", "");
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(TestServer.json(r.body()).get("flushed_pages").asInt()).isPositive();
    assertThat(s.metric("ringmaster:num_used_tokens")).isZero();
    assertThat(s.metric("ringmaster:radix_cache_pages")).isZero();
  }
}
