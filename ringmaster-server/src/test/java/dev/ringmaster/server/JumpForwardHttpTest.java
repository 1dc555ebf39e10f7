package dev.ringmaster.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.http.HttpResponse;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Jump-forward decoding over HTTP on the embedded model: a regex with long forced stretches gives a
 * matching output in fewer engine steps than with jump-forward off, the stream carries the forced
 * text as it is appended, and usage counts the forced tokens.
 */
class JumpForwardHttpTest {
  private static final String REGEX =
      "\\\\{\\\"name\\\": \\\"[a-z]{1,8}\\\", \\\"kind\\\": \\\"(president address|president letter)\\\"\\\\}";
  private static final Pattern MATCH =
      Pattern.compile(
          "\\{\"name\": \"[a-z]{1,8}\", \"kind\": \"(president address|president letter)\"\\}");
  private static TestServer on;
  private static TestServer off;

  @BeforeAll
  static void start() {
    on = TestServer.embedded();
    off = TestServer.embedded(TestServer.defaultBatch().withJumpForward(false));
  }

  @AfterAll
  static void stop() {
    on.close();
    off.close();
  }

  private static String body(boolean stream) {
    return "{\"prompt\": \"The address, as JSON: \", \"max_tokens\": 100, \"temperature\": 0,"
        + " \"regex\": \""
        + REGEX
        + "\", \"stream\": "
        + stream
        + (stream ? ", \"stream_options\": {\"include_usage\": true}" : "")
        + "}";
  }

  /** The text and completion tokens of a non-streamed completion, and the engine steps it took. */
  private record Result(String text, int completionTokens, long steps) {}

  private static Result complete(TestServer s) {
    long before = s.engine.stats().steps();
    HttpResponse<String> r = s.post("/v1/completions", body(false));
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    JsonNode j = TestServer.json(r.body());
    assertThat(j.at("/choices/0/finish_reason").asText()).as(r.body()).isEqualTo("stop");
    return new Result(
        j.at("/choices/0/text").asText(),
        j.at("/usage/completion_tokens").asInt(),
        s.engine.stats().steps() - before);
  }

  @Test
  void forcedTextTakesFewerStepsAndStaysInTheLanguage() {
    Result jump = complete(on);
    Result plain = complete(off);
    assertThat(jump.text()).matches(MATCH);
    assertThat(plain.text()).matches(MATCH);
    assertThat(jump.steps()).isLessThan(plain.steps());
    // One step per sampled token (the prompt's step samples the first); forced tokens come
    // without steps of their own and still count as completion tokens.
    assertThat(plain.completionTokens()).isEqualTo((int) plain.steps());
    assertThat(jump.completionTokens()).isGreaterThan((int) jump.steps());
  }

  @Test
  void streamCarriesTheForcedTextAndUsageCountsIt() {
    Result whole = complete(on);
    HttpResponse<String> r = on.post("/v1/completions", body(true));
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    StringBuilder text = new StringBuilder();
    int usage = -1;
    int chunks = 0;
    for (String line : r.body().split("\n")) {
      if (!line.startsWith("data: ") || line.equals("data: [DONE]")) {
        continue;
      }
      JsonNode c = TestServer.json(line.substring(6));
      for (JsonNode ch : c.path("choices")) {
        text.append(ch.path("text").asText());
        chunks++;
      }
      if (c.hasNonNull("usage")) {
        usage = c.at("/usage/completion_tokens").asInt();
      }
    }
    assertThat(text.toString()).isEqualTo(whole.text());
    assertThat(usage).isEqualTo(whole.completionTokens());
    assertThat(chunks).isGreaterThan(1);
  }

  @Test
  void serverInfoSaysWhetherItIsOn() {
    assertThat(
            TestServer.json(on.get("/get_server_info").body())
                .at("/internal_states/0/jump_forward")
                .asBoolean())
        .isTrue();
    assertThat(
            TestServer.json(off.get("/get_server_info").body())
                .at("/internal_states/0/jump_forward")
                .asBoolean())
        .isFalse();
  }
}
