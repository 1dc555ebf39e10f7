package dev.ringmaster.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.models.completions.CompletionCreateParams;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** With --api-key every endpoint but /health wants {@code Authorization: Bearer KEY}. */
class ApiKeyTest {
  private static TestServer s;

  @BeforeAll
  static void start() {
    s =
        TestServer.start(
            lm -> lm, ServerConfig.defaults().withApiKey("s3cret"), TestServer.defaultBatch());
  }

  @AfterAll
  static void stop() {
    s.close();
  }

  @Test
  void keyIsRequiredExceptForHealth() {
    assertThat(s.get("/health").statusCode()).isEqualTo(200);
    BadInputTest.assertError(s.get("/v1/models"), 401, null);
    BadInputTest.assertError(s.get("/metrics"), 401, null);
    BadInputTest.assertError(
        s.post("/generate", "{\"text\": \"hi\"}", b -> b.header("Authorization", "Bearer nope")),
        401,
        null);
    assertThat(
            s.post(
                    "/v1/completions",
                    "{\"prompt\": \"hi\", \"max_tokens\": 2}",
                    b -> b.header("Authorization", "Bearer s3cret"))
                .statusCode())
        .isEqualTo(200);
    OpenAIClient client =
        OpenAIOkHttpClient.builder().baseUrl(s.url() + "/v1").apiKey("s3cret").build();
    try {
      var c =
          client
              .completions()
              .create(
                  CompletionCreateParams.builder()
                      .model(TestServer.MODEL)
                      .prompt("hi")
                      .maxTokens(2)
                      .build());
      assertThat(c.choices()).hasSize(1);
    } finally {
      client.close();
    }
  }
}
