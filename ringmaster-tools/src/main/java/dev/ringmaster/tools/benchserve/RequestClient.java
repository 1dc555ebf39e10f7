package dev.ringmaster.tools.benchserve;

import com.fasterxml.jackson.databind.JsonNode;
import dev.ringmaster.model.tokenizer.Tokenizer;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * Sends one benchmark request and times its response as sglang.bench_serving does: TTFT at the
 * first chunk that carries text, one inter-token latency per later chunk (the native API's
 * cumulative events: the gap split evenly over the tokens the event added), end-to-end latency at
 * the last line. Server-sent events are read line by line off an HTTP/1.1 stream.
 */
final class RequestClient {
  /** As long as sglang.bench_serving waits for one response. */
  static final Duration REQUEST_TIMEOUT = Duration.ofHours(6);

  private final HttpClient http;
  private final URI uri;
  private final Backend backend;
  private final String model;
  private final BenchServeConfig.Load load;
  private final String apiKey;
  private final Tokenizer tokenizer;

  /**
   * @param model the model name OpenAI bodies carry
   * @param tokenizer counts output tokens when the server reports none; may be null
   */
  RequestClient(
      HttpClient http,
      String baseUrl,
      Backend backend,
      String model,
      BenchServeConfig.Load load,
      String apiKey,
      Tokenizer tokenizer) {
    this.http = http;
    this.uri = URI.create(baseUrl + backend.path());
    this.backend = backend;
    this.model = model;
    this.load = load;
    this.apiKey = apiKey;
    this.tokenizer = tokenizer;
  }

  /** Sends {@code row} and measures the answer; never throws for a failed request. */
  RequestOutput send(DatasetRow row) {
    byte[] body;
    try {
      body = RequestBodies.JSON.writeValueAsBytes(RequestBodies.of(backend, model, row, load));
    } catch (IOException e) {
      throw new IllegalStateException("cannot write a request body", e);
    }
    HttpRequest.Builder rb =
        HttpRequest.newBuilder(uri)
            .timeout(REQUEST_TIMEOUT)
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofByteArray(body));
    ApiKey.authorize(rb, apiKey);
    long start = System.nanoTime();
    try {
      HttpResponse<InputStream> r =
          http.send(rb.build(), HttpResponse.BodyHandlers.ofInputStream());
      try (InputStream in = r.body()) {
        if (r.statusCode() != 200) {
          String text = new String(in.readNBytes(2000), StandardCharsets.UTF_8).strip();
          return RequestOutput.failed(start, "HTTP " + r.statusCode() + ": " + text);
        }
        ResponseTimer t = new ResponseTimer(backend, start);
        if (load.disableStream()) {
          t.whole(RequestBodies.JSON.readTree(in), System.nanoTime());
        } else {
          BufferedReader lines =
              new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
          for (String line; (line = lines.readLine()) != null && t.error() == null; ) {
            t.line(line, System.nanoTime());
          }
          if (t.error() == null && !t.sawDone()) {
            t.fail("the stream ended before 'data: [DONE]'");
          }
        }
        return t.result(row.outputLen(), tokenizer);
      }
    } catch (IOException e) {
      return RequestOutput.failed(start, describe(e));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return RequestOutput.failed(start, "interrupted");
    }
  }

  /** An exception and its causes in one line (HTTP client exceptions often carry no message). */
  static String describe(Throwable e) {
    StringBuilder sb = new StringBuilder();
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (!sb.isEmpty()) {
        sb.append("; caused by ");
      }
      sb.append(t.getClass().getSimpleName());
      if (t.getMessage() != null) {
        sb.append(": ").append(t.getMessage());
      }
      if (t.getCause() == t) {
        break;
      }
    }
    return sb.toString();
  }

  /** Reads an error event's message, whether it is an object with a message or a string. */
  static String errorText(JsonNode error) {
    JsonNode m = error.path("message");
    return m.isTextual() ? m.asText() : error.toString();
  }
}
