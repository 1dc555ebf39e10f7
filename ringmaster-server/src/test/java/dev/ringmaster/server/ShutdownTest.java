package dev.ringmaster.server;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Graceful shutdown: in-flight requests finish (or are aborted past the timeout), then it stops.
 */
class ShutdownTest {
  private static ServerConfig withTimeout(Duration d) {
    ServerConfig c = ServerConfig.defaults();
    return new ServerConfig(c.host(), 0, null, c.maxRequestBytes(), c.maxChoices(), d, Map.of());
  }

  private static final String LONG_STREAM =
      "{\"prompt\": [5, 6], \"stream\": true, \"max_tokens\": 150, \"ignore_eos\": true}";

  @Test
  void inFlightRequestsFinishBeforeTheServerStops() throws Exception {
    TestServer s =
        TestServer.start(
            TestServer.slow(10), withTimeout(Duration.ofSeconds(20)), TestServer.defaultBatch());
    CompletableFuture<HttpResponse<String>> inflight =
        CompletableFuture.supplyAsync(() -> s.post("/v1/completions", LONG_STREAM));
    while (s.engine.stats().running() == 0) {
      Thread.sleep(5);
    }
    CompletableFuture<Void> stopping = CompletableFuture.runAsync(s::close);
    while (s.engine.isAccepting()) {
      Thread.sleep(5);
    }
    BadInputTest.assertError(s.post("/v1/completions", "{\"prompt\": \"hi\"}"), 503, null);
    assertThat(s.get("/health").statusCode()).isEqualTo(503);
    HttpResponse<String> r = inflight.get(30, TimeUnit.SECONDS);
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.body()).contains("\"finish_reason\":\"length\"").endsWith("data: [DONE]\n\n");
    stopping.get(30, TimeUnit.SECONDS);
    assertThat(s.engine.pool().used()).isZero();
  }

  @Test
  void aRequestStillQueuedAtShutdownGetsARetryable503() throws Exception {
    dev.ringmaster.engine.batch.BatchConfig one =
        new dev.ringmaster.engine.batch.BatchConfig(1, 256, 64, 16, 1024);
    TestServer s = TestServer.start(TestServer.slow(20), withTimeout(Duration.ofMillis(300)), one);
    CompletableFuture<HttpResponse<String>> running =
        CompletableFuture.supplyAsync(() -> s.post("/v1/completions", LONG_STREAM));
    while (s.engine.stats().running() == 0) {
      Thread.sleep(5);
    }
    String queuedBody = "{\"prompt\": [7, 8], \"max_tokens\": 5}";
    CompletableFuture<HttpResponse<String>> queued =
        CompletableFuture.supplyAsync(() -> s.post("/v1/completions", queuedBody));
    String queuedStream = "{\"prompt\": [7, 8], \"max_tokens\": 5, \"stream\": true}";
    CompletableFuture<HttpResponse<String>> queuedStreaming =
        CompletableFuture.supplyAsync(() -> s.post("/v1/completions", queuedStream));
    while (s.engine.stats().queued() < 2) {
      Thread.sleep(5);
    }
    s.close();
    for (HttpResponse<String> r :
        java.util.List.of(
            queued.get(30, TimeUnit.SECONDS), queuedStreaming.get(30, TimeUnit.SECONDS))) {
      BadInputTest.assertError(r, 503, null);
      assertThat(r.headers().firstValue("retry-after")).isPresent();
    }
    HttpResponse<String> r = running.get(30, TimeUnit.SECONDS);
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.body()).contains("\"finish_reason\":\"abort\"");
  }

  @Test
  void requestsStillRunningAtTheTimeoutAreAborted() throws Exception {
    TestServer s =
        TestServer.start(
            TestServer.slow(20), withTimeout(Duration.ofMillis(200)), TestServer.defaultBatch());
    CompletableFuture<HttpResponse<String>> inflight =
        CompletableFuture.supplyAsync(() -> s.post("/v1/completions", LONG_STREAM));
    while (s.engine.stats().running() == 0) {
      Thread.sleep(5);
    }
    long t0 = System.nanoTime();
    s.close();
    assertThat((System.nanoTime() - t0) / 1e9).isLessThan(10);
    HttpResponse<String> r = inflight.get(30, TimeUnit.SECONDS);
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.body()).contains("\"finish_reason\":\"abort\"").endsWith("data: [DONE]\n\n");
    assertThat(s.engine.pool().used()).isZero();
  }
}
