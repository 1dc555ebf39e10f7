package dev.ringmaster.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * An exception inside a forward step fails the requests it belongs to with a 500 error object;
 * requests batched with them, and later ones, are served normally.
 */
class FaultInjectionTest {
  private static final int POISON = 299;
  private static TestServer s;

  @BeforeAll
  static void start() {
    s =
        TestServer.start(
            TestServer.withHook(
                tokens -> {
                  for (int t : tokens) {
                    if (t == POISON) {
                      throw new IllegalStateException("injected fault in the forward pass");
                    }
                  }
                }),
            ServerConfig.defaults(),
            TestServer.defaultBatch());
  }

  @AfterAll
  static void stop() {
    s.close();
  }

  @Test
  void faultFailsOnlyItsRequest() throws Exception {
    String good = "{\"prompt\": [5, 6, 7], \"max_tokens\": 8, \"ignore_eos\": true}";
    String bad = "{\"prompt\": [5, " + POISON + ", 7], \"max_tokens\": 8}";
    List<CompletableFuture<HttpResponse<String>>> goods = new ArrayList<>();
    CompletableFuture<HttpResponse<String>> failed;
    CompletableFuture<HttpResponse<String>> failedStream;
    try (ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor()) {
      for (int i = 0; i < 6; i++) {
        goods.add(CompletableFuture.supplyAsync(() -> s.post("/v1/completions", good), pool));
      }
      failed = CompletableFuture.supplyAsync(() -> s.post("/v1/completions", bad), pool);
      failedStream =
          CompletableFuture.supplyAsync(
              () ->
                  s.post(
                      "/v1/completions",
                      "{\"prompt\": [5, " + POISON + "], \"max_tokens\": 8, \"stream\": true}"),
              pool);
      HttpResponse<String> f = failed.get(60, TimeUnit.SECONDS);
      BadInputTest.assertError(f, 500, null);
      JsonNode err = TestServer.json(f.body()).get("error");
      assertThat(err.get("type").asText()).isEqualTo("server_error");
      assertThat(err.get("message").asText()).contains("injected fault");
      HttpResponse<String> fs = failedStream.get(60, TimeUnit.SECONDS);
      assertThat(fs.statusCode()).isEqualTo(200); // headers were sent before the step failed
      assertThat(fs.body())
          .contains("\"error\"")
          .contains("injected fault")
          .endsWith("data: [DONE]\n\n");
      for (CompletableFuture<HttpResponse<String>> g : goods) {
        HttpResponse<String> r = g.get(60, TimeUnit.SECONDS);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        assertThat(TestServer.json(r.body()).get("usage").get("completion_tokens").asInt())
            .isEqualTo(8);
      }
    }
    s.awaitDrained();
    assertThat(s.metric("ringmaster:num_failed_requests_total")).isEqualTo(2);
    assertThat(s.get("/health_generate").statusCode()).isEqualTo(200);
  }
}
