package dev.ringmaster.cli;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/**
 * The requests {@code serve} sends itself before it reports that it serves (SGLang's server
 * warm-up): one streamed and one plain completion through the real HTTP stack, so that the first
 * client's request does not pay for the cold parts of the serving path (the HTTP and JSON code, the
 * event stream, the tokenizer's and the scheduler's first calls) that the engine's own warm-up does
 * not reach.
 */
final class ServerWarmup {
  /** The prompt of both requests, as SGLang's warm-up sends it. */
  static final String PROMPT = "The capital city of France is";

  private static final int MAX_TOKENS = 8;

  private ServerWarmup() {}

  /**
   * Sends the warm-up requests to the server at {@code baseUrl} ({@code apiKey} or null) and
   * returns how long they took in ms.
   *
   * @throws IOException when a request fails or is not answered with 200
   */
  static long run(String baseUrl, String apiKey) throws IOException, InterruptedException {
    long t0 = System.nanoTime();
    HttpClient client =
        HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(10))
            .build();
    try (client) {
      for (boolean stream : new boolean[] {true, false}) {
        String body =
            "{\"prompt\": \""
                + PROMPT
                + "\", \"max_tokens\": "
                + MAX_TOKENS
                + ", \"temperature\": 0, \"stream\": "
                + stream
                + "}";
        HttpRequest.Builder req =
            HttpRequest.newBuilder(URI.create(baseUrl + "/v1/completions"))
                .timeout(Duration.ofMinutes(5))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body));
        if (apiKey != null) {
          req.header("Authorization", "Bearer " + apiKey);
        }
        HttpResponse<InputStream> r =
            client.send(req.build(), HttpResponse.BodyHandlers.ofInputStream());
        try (InputStream in = r.body()) {
          byte[] answer = in.readAllBytes(); // a stream is read to its end, as a client reads it
          if (r.statusCode() != 200) {
            throw new IOException(
                "warm-up request answered "
                    + r.statusCode()
                    + ": "
                    + new String(answer, java.nio.charset.StandardCharsets.UTF_8));
          }
        }
      }
    }
    return (System.nanoTime() - t0) / 1_000_000;
  }
}
