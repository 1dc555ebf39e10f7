package dev.ringmaster.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.engine.batch.BatchConfig;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** Bounded load: a fixed number of requests within a fixed time, and back-pressure when full. */
class LoadTest {
  private static final int REQUESTS = 240;
  private static final int WORKERS = 24;

  @Test
  void fixedRequestCountCompletesWithinBudget() throws Exception {
    try (TestServer s = TestServer.start()) {
      AtomicInteger next = new AtomicInteger();
      AtomicInteger ok = new AtomicInteger();
      long t0 = System.nanoTime();
      try (ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor()) {
        List<Future<?>> fs = new ArrayList<>();
        for (int w = 0; w < WORKERS; w++) {
          fs.add(
              pool.submit(
                  () -> {
                    for (int i; (i = next.getAndIncrement()) < REQUESTS; ) {
                      boolean stream = i % 3 == 0;
                      HttpResponse<String> r =
                          s.post(
                              "/v1/completions",
                              "{\"prompt\": \"request "
                                  + i
                                  + "\", \"max_tokens\": 6, \"temperature\": 0.7, \"seed\": "
                                  + i
                                  + ", \"stream\": "
                                  + stream
                                  + "}");
                      if (r.statusCode() == 200) {
                        ok.incrementAndGet();
                      }
                    }
                  }));
        }
        for (Future<?> f : fs) {
          f.get(120, TimeUnit.SECONDS);
        }
      }
      double seconds = (System.nanoTime() - t0) / 1e9;
      assertThat(ok.get()).isEqualTo(REQUESTS);
      assertThat(seconds).isLessThan(120);
      s.awaitDrained();
      assertThat(s.metric("ringmaster:num_requests_total")).isEqualTo(REQUESTS);
      System.out.printf(
          "load: %d requests, %d workers, %.2f s, %.1f req/s%n",
          REQUESTS, WORKERS, seconds, REQUESTS / seconds);
    }
  }

  @Test
  void aFullQueueAnswers503WithRetryAfter() throws Exception {
    // One running request and a queue of two, 10 ms per step: a burst of 12 cannot all fit.
    try (TestServer s =
        TestServer.start(
            TestServer.slow(10), ServerConfig.defaults(), new BatchConfig(1, 2, 64, 16, 256))) {
      List<Future<HttpResponse<String>>> fs = new ArrayList<>();
      try (ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor()) {
        for (int i = 0; i < 12; i++) {
          fs.add(
              pool.submit(
                  () ->
                      s.post(
                          "/generate",
                          "{\"input_ids\": [5, 6], \"sampling_params\": {\"max_new_tokens\": 10}}")));
        }
        int ok = 0;
        int full = 0;
        for (Future<HttpResponse<String>> f : fs) {
          HttpResponse<String> r = f.get(60, TimeUnit.SECONDS);
          if (r.statusCode() == 503) {
            BadInputTest.assertError(r, 503, null);
            assertThat(r.headers().firstValue("retry-after")).isPresent();
            full++;
          } else {
            assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
            ok++;
          }
        }
        assertThat(full).isPositive();
        assertThat(ok).isGreaterThanOrEqualTo(1);
      }
      s.awaitDrained();
    }
  }
}
