package dev.ringmaster.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.ByteArrayInputStream;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every kind of bad input gets a 4xx with an OpenAI-style error object, and the server keeps
 * serving: after each case a good request must succeed.
 */
class BadInputTest {
  private static final long BODY_LIMIT = 16 * 1024;
  private static TestServer s;

  @BeforeAll
  static void start() {
    s =
        TestServer.start(
            lm -> lm,
            ServerConfig.defaults().withMaxRequestBytes(BODY_LIMIT),
            TestServer.defaultBatch());
  }

  @AfterAll
  static void stop() {
    s.close();
  }

  @AfterEach
  void goodRequestStillWorks() {
    HttpResponse<String> r =
        s.post(
            "/v1/completions", "{\"model\": \"tiny-moe\", \"prompt\": \"hi\", \"max_tokens\": 2}");
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    assertThat(TestServer.json(r.body()).get("choices").get(0).has("text")).isTrue();
  }

  static Stream<Arguments> cases() {
    String c = "/v1/completions";
    String ch = "/v1/chat/completions";
    String msg = "\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]";
    String longIds = "[" + "5,".repeat(299) + "5]";
    return Stream.of(
        Arguments.of(c, "{\"prompt\": \"hi\",", 400, null),
        Arguments.of(c, "[1, 2]", 400, null),
        Arguments.of(c, "", 400, null),
        Arguments.of(c, "{\"prompt\": \"hi\"} {}", 400, null),
        Arguments.of(c, "{\"prompt\": \"hi\", \"prompt\": \"ho\"}", 400, null),
        Arguments.of(c, "{\"prompt\": \"hi\", \"max_tokens\": \"ten\"}", 400, "max_tokens"),
        Arguments.of(c, "{\"prompt\": \"hi\", \"max_tokens\": 2.5}", 400, "max_tokens"),
        Arguments.of(c, "{\"prompt\": 5}", 400, "prompt"),
        Arguments.of(c, "{\"prompt\": {\"a\": 1}}", 400, "prompt"),
        Arguments.of(c, "{}", 400, "prompt"),
        Arguments.of(c, "{\"model\": \"gpt-9\", \"prompt\": \"hi\"}", 404, "model"),
        Arguments.of(c, "{\"model\": 7, \"prompt\": \"hi\"}", 400, "model"),
        Arguments.of(c, "{\"prompt\": \"hi\", \"max_tokens\": 0}", 400, "max_tokens"),
        Arguments.of(c, "{\"prompt\": \"hi\", \"max_tokens\": -3}", 400, "max_tokens"),
        Arguments.of(c, "{\"prompt\": \"hi\", \"max_tokens\": 100000}", 400, "max_tokens"),
        Arguments.of(c, "{\"prompt\": " + longIds + "}", 400, "prompt"),
        Arguments.of(c, "{\"prompt\": \"\"}", 400, "prompt"),
        Arguments.of(c, "{\"prompt\": []}", 400, "prompt"),
        Arguments.of(c, "{\"prompt\": [[]]}", 400, "prompt"),
        Arguments.of(c, "{\"prompt\": [5, 999]}", 400, "prompt"),
        Arguments.of(c, "{\"prompt\": [5, -1]}", 400, "prompt"),
        Arguments.of(c, "{\"prompt\": [5, 1.5]}", 400, "prompt"),
        Arguments.of(c, "{\"prompt\": [5, 99999999999]}", 400, "prompt"),
        Arguments.of(c, "{\"prompt\": \"a\\ud800b\"}", 400, "prompt"),
        Arguments.of(c, "{\"prompt\": \"hi\", \"n\": 100}", 400, "n"),
        Arguments.of(c, "{\"prompt\": \"hi\", \"n\": 0}", 400, "n"),
        Arguments.of(c, "{\"prompt\": \"hi\", \"temperature\": -1}", 400, "temperature"),
        Arguments.of(c, "{\"prompt\": \"hi\", \"temperature\": \"hot\"}", 400, "temperature"),
        Arguments.of(c, "{\"prompt\": \"hi\", \"top_p\": 0}", 400, "top_p"),
        Arguments.of(c, "{\"prompt\": \"hi\", \"top_p\": 1.5}", 400, "top_p"),
        Arguments.of(c, "{\"prompt\": \"hi\", \"top_k\": -5}", 400, "top_k"),
        Arguments.of(c, "{\"prompt\": \"hi\", \"seed\": \"x\"}", 400, "seed"),
        Arguments.of(c, "{\"prompt\": \"hi\", \"stop\": {\"a\": 1}}", 400, "stop"),
        Arguments.of(c, "{\"prompt\": \"hi\", \"stop\": [\"\"]}", 400, "stop"),
        Arguments.of(c, "{\"prompt\": \"hi\", \"stop\": [400]}", 400, "stop"),
        Arguments.of(c, "{\"prompt\": \"hi\", \"logprobs\": 50}", 400, "logprobs"),
        Arguments.of(c, "{\"prompt\": \"hi\", \"stream\": \"yes\"}", 400, "stream"),
        Arguments.of(
            c, "{\"prompt\": \"hi\", \"stream_options\": {\"include_usage\": true}}", 400, null),
        Arguments.of(
            c,
            "{\"prompt\": \"hi\", \"stream\": true, \"stream_options\": {\"usage\": true}}",
            400,
            "stream_options.usage"),
        Arguments.of(c, "{\"prompt\": \"hi\", \"presence_penalty\": 2.5}", 400, "presence_penalty"),
        Arguments.of(
            c, "{\"prompt\": \"hi\", \"frequency_penalty\": -3}", 400, "frequency_penalty"),
        Arguments.of(
            c, "{\"prompt\": \"hi\", \"frequency_penalty\": \"x\"}", 400, "frequency_penalty"),
        Arguments.of(
            c, "{\"prompt\": \"hi\", \"repetition_penalty\": 0}", 400, "repetition_penalty"),
        Arguments.of(
            c, "{\"prompt\": \"hi\", \"repetition_penalty\": 5}", 400, "repetition_penalty"),
        Arguments.of(c, "{\"prompt\": \"hi\", \"min_p\": 1.5}", 400, "min_p"),
        Arguments.of(c, "{\"prompt\": \"hi\", \"logit_bias\": {\"5\": 101}}", 400, "logit_bias"),
        Arguments.of(c, "{\"prompt\": \"hi\", \"logit_bias\": {\"abc\": 1}}", 400, "logit_bias"),
        Arguments.of(c, "{\"prompt\": \"hi\", \"logit_bias\": {\"320\": 1}}", 400, "logit_bias"),
        Arguments.of(c, "{\"prompt\": \"hi\", \"logit_bias\": {\"5\": \"x\"}}", 400, "logit_bias"),
        Arguments.of(c, "{\"prompt\": \"hi\", \"logit_bias\": [5]}", 400, "logit_bias"),
        Arguments.of(
            "/generate",
            "{\"text\": \"hi\", \"sampling_params\": {\"logit_bias\": {\"-1\": 1}}}",
            400,
            "sampling_params.logit_bias"),
        Arguments.of(
            "/generate",
            "{\"text\": \"hi\", \"sampling_params\": {\"presence_penalty\": 9}}",
            400,
            "sampling_params.presence_penalty"),
        Arguments.of(c, "{\"prompt\": \"hi\", \"echo\": true}", 400, "echo"),
        Arguments.of(c, "{\"prompt\": \"hi\", \"best_of\": 3}", 400, "best_of"),
        Arguments.of(c, "{\"prompt\": \"hi\", \"suffix\": \"x\"}", 400, "suffix"),
        Arguments.of(c, "{\"prompt\": " + "[".repeat(2000) + "]".repeat(2000) + "}", 400, null),
        Arguments.of(ch, "{}", 400, "messages"),
        Arguments.of(ch, "{\"messages\": []}", 400, "messages"),
        Arguments.of(ch, "{\"messages\": \"hi\"}", 400, "messages"),
        Arguments.of(
            ch, "{\"messages\": [{\"role\": \"wizard\", \"content\": \"hi\"}]}", 400, null),
        Arguments.of(ch, "{\"messages\": [{\"role\": \"user\", \"content\": 5}]}", 400, null),
        Arguments.of(
            ch,
            "{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"image_url\"}]}]}",
            400,
            null),
        Arguments.of(
            ch, "{" + msg + ", \"tools\": [{\"type\": \"function\"}]}", 400, "tools[0].function"),
        Arguments.of(ch, "{" + msg + ", \"top_logprobs\": 3}", 400, "top_logprobs"),
        Arguments.of(
            ch,
            "{" + msg + ", \"response_format\": {\"type\": \"xml\"}}",
            400,
            "response_format.type"),
        Arguments.of(ch, "{" + msg + ", \"max_completion_tokens\": 0}", 400, null),
        Arguments.of("/generate", "{\"text\": \"hi\", \"input_ids\": [5]}", 400, "text"),
        Arguments.of("/generate", "{\"sampling_params\": {}}", 400, "text"),
        Arguments.of(
            "/generate",
            "{\"text\": \"hi\", \"sampling_params\": {\"max_new_token\": 5}}",
            400,
            "sampling_params.max_new_token"),
        Arguments.of(
            "/generate",
            "{\"text\": \"hi\", \"sampling_params\": {\"max_new_tokens\": 0}}",
            400,
            null),
        Arguments.of("/generate", "{\"text\": \"hi\", \"sampling_params\": 5}", 400, null),
        Arguments.of("/generate", "{\"input_ids\": [[5], [400]]}", 400, "input_ids"),
        Arguments.of("/tokenize", "{\"text\": 5}", 400, "text"),
        Arguments.of("/detokenize", "{\"tokens\": [5, 320]}", 400, "tokens"),
        Arguments.of("/detokenize", "{\"tokens\": \"abc\"}", 400, "tokens"),
        Arguments.of("/no/such/path", "{}", 404, null));
  }

  @ParameterizedTest(name = "{0} {1}")
  @MethodSource("cases")
  void badRequestGetsAnErrorObject(String path, String body, int status, String param) {
    HttpResponse<String> r = s.post(path, body);
    assertError(r, status, param);
  }

  static void assertError(HttpResponse<String> r, int status, String param) {
    assertThat(r.statusCode()).as(r.body()).isEqualTo(status);
    assertThat(r.headers().firstValue("content-type").orElse("")).startsWith("application/json");
    JsonNode err = TestServer.json(r.body()).get("error");
    assertThat(err).as(r.body()).isNotNull();
    assertThat(err.get("message").asText()).isNotBlank();
    assertThat(err.get("type").asText()).isNotBlank();
    assertThat(err.has("param")).isTrue();
    assertThat(err.has("code")).isTrue();
    if (param != null) {
      assertThat(err.get("param").asText()).isEqualTo(param);
    }
  }

  @Test
  void invalidUtf8IsRejected() {
    byte[] head = "{\"prompt\": \"a".getBytes(StandardCharsets.UTF_8);
    byte[] tail = "b\"}".getBytes(StandardCharsets.UTF_8);
    byte[] body = new byte[head.length + 2 + tail.length];
    System.arraycopy(head, 0, body, 0, head.length);
    body[head.length] = (byte) 0xC3; // a lead byte followed by a non-continuation byte
    body[head.length + 1] = (byte) 0x28;
    System.arraycopy(tail, 0, body, head.length + 2, tail.length);
    assertError(s.postBytes("/v1/completions", body), 400, null);
  }

  @Test
  void oversizedBodiesGet413WithAndWithoutContentLength() {
    String big = "{\"prompt\": \"" + "a".repeat((int) BODY_LIMIT) + "\"}";
    HttpResponse<String> sized = s.post("/v1/completions", big);
    assertError(sized, 413, null);
    // The unread rest of the body makes the connection unusable; keep-alive clients must be told.
    assertThat(sized.headers().firstValue("connection")).hasValue("close");
    HttpRequest chunked =
        HttpRequest.newBuilder(URI.create(s.url() + "/v1/completions"))
            .timeout(Duration.ofSeconds(30))
            .POST(
                HttpRequest.BodyPublishers.ofInputStream(
                    () -> new ByteArrayInputStream(big.getBytes(StandardCharsets.UTF_8))))
            .build();
    assertError(s.send(chunked), 413, null);
  }

  @Test
  void wrongMethodOnAKnownPathIs405() {
    assertError(s.get("/v1/completions"), 405, null);
    assertError(s.get("/generate"), 405, null);
  }
}
