package dev.ringmaster.tools.benchserve;

import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/**
 * {@code --flush-cache}: empties the server's prefix cache before the measured run, through
 * SGLang's {@code POST /flush_cache} (Ringmaster serves it too). Without it, a second run of the
 * same prompts finds them cached and measures decode alone.
 */
final class CacheFlush {
  private static final Duration TIMEOUT = Duration.ofSeconds(60);

  private CacheFlush() {}

  /**
   * Flushes, or fails naming the server's answer.
   *
   * @throws BenchServeException when the server refuses or has no such endpoint
   */
  static void flush(HttpClient http, String baseUrl, String apiKey, PrintStream log)
      throws InterruptedException {
    HttpRequest.Builder b =
        HttpRequest.newBuilder(URI.create(baseUrl + "/flush_cache"))
            .timeout(TIMEOUT)
            .POST(HttpRequest.BodyPublishers.noBody());
    ApiKey.authorize(b, apiKey);
    HttpResponse<String> r;
    try {
      r = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    } catch (IOException e) {
      throw new BenchServeException(
          "--flush-cache: POST " + baseUrl + "/flush_cache failed: " + e.getMessage(), e);
    }
    if (r.statusCode() != 200) {
      String body = r.body() == null ? "" : r.body().strip();
      throw new BenchServeException(
          "--flush-cache: POST "
              + baseUrl
              + "/flush_cache answered HTTP "
              + r.statusCode()
              + (body.isEmpty() ? "" : " (" + body.substring(0, Math.min(body.length(), 200)) + ")")
              + "; the server has no SGLang cache endpoint: leave out --flush-cache");
    }
    log.println("Flushed the server's prefix cache.");
  }
}
