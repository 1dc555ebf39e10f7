package dev.ringmaster.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.http.HttpResponse;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** {@code /v1/completions} prompt shapes: a flat list of ints is one prompt, however long. */
class CompletionsPromptTest {
  private static TestServer s;

  @BeforeAll
  static void start() {
    s = TestServer.start();
  }

  @AfterAll
  static void stop() {
    s.close();
  }

  private static String ids(int n) {
    return IntStream.range(0, n)
        .mapToObj(i -> String.valueOf(5 + i % 50))
        .collect(Collectors.joining(",", "[", "]"));
  }

  @Test
  void aFlatListOfHundredIdsIsOnePrompt() {
    HttpResponse<String> r =
        s.post("/v1/completions", "{\"prompt\": " + ids(100) + ", \"max_tokens\": 2}");
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    JsonNode j = TestServer.json(r.body());
    assertThat(j.get("choices")).hasSize(1);
    assertThat(j.get("usage").get("prompt_tokens").asInt()).isEqualTo(100);
  }

  @Test
  void aListOfListsIsManyPromptsAndIsCounted() {
    String three = "[" + ids(3) + "," + ids(4) + "," + ids(5) + "]";
    HttpResponse<String> r =
        s.post("/v1/completions", "{\"prompt\": " + three + ", \"max_tokens\": 1}");
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    assertThat(TestServer.json(r.body()).get("choices")).hasSize(3);
    assertThat(TestServer.json(r.body()).get("usage").get("prompt_tokens").asInt()).isEqualTo(12);

    String many = IntStream.range(0, 65).mapToObj(i -> ids(2)).collect(Collectors.joining(","));
    HttpResponse<String> tooMany = s.post("/v1/completions", "{\"prompt\": [" + many + "]}");
    BadInputTest.assertError(tooMany, 400, "prompt");
    assertThat(tooMany.body()).contains("at most 64 prompts");
  }
}
