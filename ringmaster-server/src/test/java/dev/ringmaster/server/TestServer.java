package dev.ringmaster.server;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ringmaster.backend.cpu.model.CausalLm;
import dev.ringmaster.engine.batch.BatchConfig;
import dev.ringmaster.engine.batch.BatchEngine;
import dev.ringmaster.model.tokenizer.Tokenizer;
import dev.ringmaster.runtime.LanguageModel;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.function.UnaryOperator;

/**
 * A real server on loopback (a free port) over the golden deepseek_v3_basic fixture, with a chat
 * template added so that chat works, plus a small raw HTTP client.
 */
final class TestServer implements AutoCloseable {
  static final String MODEL = "tiny-moe";
  static final String TEMPLATE =
      "{% for m in messages %}<|bos|>{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
          + "{% if add_generation_prompt %}assistant:{% endif %}";
  private static Path modelDir;

  final RingmasterServer server;
  final BatchEngine engine;
  final CausalLm lm;
  final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
  static final ObjectMapper JSON = new ObjectMapper();

  private TestServer(RingmasterServer server, BatchEngine engine, CausalLm lm) {
    this.server = server;
    this.engine = engine;
    this.lm = lm;
  }

  static TestServer start() {
    return start(lm -> lm, ServerConfig.defaults(), defaultBatch());
  }

  /** A model whose every step first runs {@code hook} (to slow it down or inject faults). */
  static java.util.function.Function<CausalLm, LanguageModel> withHook(
      java.util.function.Consumer<int[]> hook) {
    return lm ->
        new LanguageModel() {
          @Override
          public dev.ringmaster.model.config.ModelConfig config() {
            return lm.config();
          }

          @Override
          public dev.ringmaster.runtime.KvCache newCache() {
            return lm.newCache();
          }

          @Override
          public dev.ringmaster.runtime.KvCache newCache(
              dev.ringmaster.runtime.KvBlockAllocator blocks) {
            return lm.newCache(blocks);
          }

          @Override
          public long weightBytes() {
            return lm.weightBytes();
          }

          @Override
          public float[] forward(
              int[] tokens,
              dev.ringmaster.runtime.BatchLayout layout,
              dev.ringmaster.runtime.KvCache[] caches,
              int[] rows) {
            hook.accept(tokens);
            return lm.forward(tokens, layout, caches, rows);
          }

          @Override
          public void close() {}
        };
  }

  /** A model that sleeps before every step, so a test can act mid-generation. */
  static java.util.function.Function<CausalLm, LanguageModel> slow(long millis) {
    return withHook(
        t -> {
          try {
            Thread.sleep(millis);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        });
  }

  static BatchConfig defaultBatch() {
    return new BatchConfig(64, 256, 64, 16, 1024);
  }

  static TestServer start(
      java.util.function.Function<CausalLm, LanguageModel> wrap,
      ServerConfig cfg,
      BatchConfig batch) {
    return start(modelDir(), wrap, cfg, batch);
  }

  /** A server on the embedded model ({@code models/sotu-moe}, trained, with a real tokenizer). */
  static TestServer embedded() {
    return embedded(defaultBatch());
  }

  /** A server on the embedded model with the given scheduling limits. */
  static TestServer embedded(BatchConfig batch) {
    Path dir =
        fixture("deepseek_v3_basic").getParent().getParent().getParent().resolve("models/sotu-moe");
    return start(dir, lm -> lm, ServerConfig.defaults(), batch);
  }

  /** A server whose model has another chat template (in a fresh fixture directory). */
  static TestServer withTemplate(String template) {
    return start(fixtureWithTemplate(template), lm -> lm, ServerConfig.defaults(), defaultBatch());
  }

  /** The fixture server whose engine speculates as {@code spec} says. */
  static TestServer speculating(dev.ringmaster.engine.spec.ServingSpeculation spec) {
    return start(modelDir(), lm -> lm, ServerConfig.defaults(), defaultBatch(), spec);
  }

  private static TestServer start(
      Path dir,
      java.util.function.Function<CausalLm, LanguageModel> wrap,
      ServerConfig cfg,
      BatchConfig batch) {
    return start(dir, wrap, cfg, batch, null);
  }

  private static TestServer start(
      Path dir,
      java.util.function.Function<CausalLm, LanguageModel> wrap,
      ServerConfig cfg,
      BatchConfig batch,
      dev.ringmaster.engine.spec.ServingSpeculation spec) {
    CausalLm lm = CausalLm.load(dir);
    BatchEngine engine = BatchEngine.start(wrap.apply(lm), batch, spec);
    Tokenizer tok = Tokenizer.load(dir);
    RingmasterServer s =
        RingmasterServer.start(new ServingModel(MODEL, dir.toString(), tok, engine), cfg);
    return new TestServer(s, engine, lm);
  }

  /** The fixture directory with a chat template in tokenizer_config.json (made once). */
  static synchronized Path modelDir() {
    if (modelDir == null) {
      modelDir = fixtureWithTemplate(TEMPLATE);
    }
    return modelDir;
  }

  private static Path fixtureWithTemplate(String template) {
    try {
      Path src = fixture("deepseek_v3_basic");
      Path dir = Files.createTempDirectory("ringmaster-server-test");
      try (var files = Files.list(src)) {
        for (Path f : files.toList()) {
          if (!f.getFileName().toString().equals("tokenizer_config.json")) {
            Files.createSymbolicLink(dir.resolve(f.getFileName()), f.toAbsolutePath());
          }
        }
      }
      ObjectNode cfg = (ObjectNode) JSON.readTree(src.resolve("tokenizer_config.json").toFile());
      cfg.put("chat_template", template);
      Files.writeString(dir.resolve("tokenizer_config.json"), JSON.writeValueAsString(cfg));
      return dir;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static Path fixture(String name) {
    Path p = Path.of("").toAbsolutePath();
    while (p != null) {
      Path f = p.resolve("fixtures/golden").resolve(name);
      if (Files.isDirectory(f)) {
        return f;
      }
      p = p.getParent();
    }
    throw new IllegalStateException("fixtures/golden/" + name + " not found above the working dir");
  }

  String url() {
    return server.url();
  }

  HttpResponse<String> post(String path, String body) {
    return post(path, body, b -> b);
  }

  HttpResponse<String> post(String path, String body, UnaryOperator<HttpRequest.Builder> extra) {
    HttpRequest.Builder b =
        HttpRequest.newBuilder(URI.create(url() + path))
            .timeout(Duration.ofSeconds(60))
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(body, StandardCharsets.UTF_8));
    return send(extra.apply(b).build());
  }

  HttpResponse<String> postBytes(String path, byte[] body) {
    return send(
        HttpRequest.newBuilder(URI.create(url() + path))
            .timeout(Duration.ofSeconds(60))
            .POST(HttpRequest.BodyPublishers.ofByteArray(body))
            .build());
  }

  HttpResponse<String> get(String path) {
    return send(
        HttpRequest.newBuilder(URI.create(url() + path))
            .timeout(Duration.ofSeconds(60))
            .GET()
            .build());
  }

  HttpResponse<String> send(HttpRequest r) {
    try {
      return http.send(r, HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  static JsonNode json(String s) {
    try {
      return JSON.readTree(s);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** A metric's value from the Prometheus text, summed over its label sets. */
  double metric(String name) {
    double sum = 0;
    boolean found = false;
    for (String line : get("/metrics").body().split("\n")) {
      if (line.startsWith(name + "{") || line.startsWith(name + " ")) {
        sum += Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
        found = true;
      }
    }
    if (!found) {
      throw new AssertionError("metric " + name + " not exported");
    }
    return sum;
  }

  /** Waits until the engine is idle and every KV block is back (prefix-cache pages flushed). */
  void awaitDrained() throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
    while (!(engine.isIdle() && engine.flushCache().join() >= 0 && engine.pool().used() == 0)) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("engine not drained: " + engine.stats());
      }
      Thread.sleep(10);
    }
  }

  /** An OpenAI Java SDK client of this server: any key, no retries (a failure shows at once). */
  com.openai.client.OpenAIClient openAi() {
    return com.openai.client.okhttp.OpenAIOkHttpClient.builder()
        .baseUrl(url() + "/v1")
        .apiKey("unused")
        .maxRetries(0)
        .build();
  }

  @Override
  public void close() {
    server.close();
    lm.close();
  }
}
