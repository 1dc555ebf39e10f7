package dev.ringmaster.tools.benchserve;

import com.fasterxml.jackson.databind.JsonNode;
import dev.ringmaster.model.tokenizer.Tokenizer;
import dev.ringmaster.model.tokenizer.TokenizerLoadException;
import dev.ringmaster.util.Progress;
import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.Semaphore;

/**
 * Runs one online serving benchmark: finds the model and a tokenizer, makes the dataset, sends the
 * warm-up requests, then every request on a virtual thread at Poisson arrival times with at most
 * {@code --max-concurrency} in flight, and computes the metrics; the server's {@code /metrics},
 * scraped before and after the timed requests, gives its own TTFT breakdown where it has one.
 */
public final class BenchServe {
  private static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(30);
  private static final int WARMUP_MAX_OUTPUT = 32;

  private BenchServe() {}

  /**
   * Runs the benchmark described by {@code config}.
   *
   * @param log where progress and notes go (the summary is the caller's to print)
   * @throws BenchServeException when the server cannot be reached, the dataset cannot be made, or
   *     every warm-up request fails
   */
  public static BenchServeResult run(BenchServeConfig config, PrintStream log)
      throws InterruptedException {
    config.validate();
    BenchServeConfig.Target target = config.target();
    Backend backend = target.backend();
    try (HttpClient http =
        HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(CONNECT_TIMEOUT)
            .build()) {
      JsonNode listed = target.model() == null ? listedModel(http, target) : null;
      String model =
          target.servedModelName() != null
              ? target.servedModelName()
              : target.model() != null ? target.model() : listed.path("id").asText();
      Tokenizer tokenizer = tokenizer(target, listed, log);
      List<DatasetRow> rows = Datasets.make(config.dataset(), tokenizer, config.load().seed());
      log.printf(
          "#Input tokens: %d%n#Output tokens: %d%n",
          rows.stream().mapToLong(r -> Math.max(r.promptLen(), 0)).sum(),
          rows.stream().mapToLong(DatasetRow::outputLen).sum());
      RequestClient client =
          new RequestClient(
              http, target.baseUrl(), backend, model, config.load(), target.apiKey(), tokenizer);
      warmUp(client, rows.getFirst(), config.load().warmupRequests(), log);
      if (config.load().flushCache()) {
        // after the warm-up, so that no measured prompt finds its prefix cached by it or by a
        // previous run of the same dataset
        CacheFlush.flush(http, target.baseUrl(), target.apiKey(), log);
      }

      Map<String, double[]> before =
          ServerLatencyScrape.scrape(http, target.baseUrl(), target.apiKey());
      long start = System.nanoTime();
      List<RequestOutput> outputs = sendAll(client, rows, config, log);
      double duration = (System.nanoTime() - start) / 1e9;
      Map<String, double[]> after =
          ServerLatencyScrape.scrape(http, target.baseUrl(), target.apiKey());
      JsonNode serverInfo = serverInfo(http, target);
      ServingMetrics metrics = ServingMetrics.of(rows, outputs, duration, tokenizer);
      return new BenchServeResult(
          config,
          model,
          rows,
          outputs,
          metrics,
          serverInfo,
          ResultReport.acceptLength(serverInfo),
          ServerLatencyScrape.breakdown(before, after));
    }
  }

  private static void warmUp(RequestClient client, DatasetRow first, int n, PrintStream log)
      throws InterruptedException {
    if (n == 0) {
      return;
    }
    log.printf("Starting warmup with %d sequences...%n", n);
    DatasetRow w = first.withOutputLen(Math.min(first.outputLen(), WARMUP_MAX_OUTPUT));
    List<RequestOutput> outs = new ArrayList<>();
    try (ExecutorService exec = Executors.newVirtualThreadPerTaskExecutor()) {
      List<Future<RequestOutput>> fs = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        fs.add(exec.submit(() -> client.send(w)));
      }
      for (Future<RequestOutput> f : fs) {
        outs.add(join(f));
      }
    }
    if (outs.stream().noneMatch(RequestOutput::success)) {
      throw new BenchServeException(
          "warm-up failed: none of "
              + n
              + " requests succeeded (first error: "
              + outs.getFirst().error()
              + "); check --base-url, --backend and --model");
    }
    log.printf("Warmup completed with %d sequences. Starting main benchmark run...%n", n);
  }

  private static List<RequestOutput> sendAll(
      RequestClient client, List<DatasetRow> rows, BenchServeConfig config, PrintStream log)
      throws InterruptedException {
    BenchServeConfig.Load load = config.load();
    Semaphore slots = load.maxConcurrency() == null ? null : new Semaphore(load.maxConcurrency());
    PoissonArrivals arrivals = new PoissonArrivals(load.requestRate(), ~load.seed());
    List<Future<RequestOutput>> fs = new ArrayList<>(rows.size());
    try (ExecutorService exec = Executors.newVirtualThreadPerTaskExecutor();
        Progress bar =
            Progress.startIf(!load.disableProgress(), "bench serve", rows.size(), "requests")) {
      for (DatasetRow row : rows) {
        fs.add(
            exec.submit(
                () -> {
                  if (slots != null) {
                    slots.acquire();
                  }
                  try {
                    return client.send(row);
                  } finally {
                    if (slots != null) {
                      slots.release();
                    }
                    synchronized (bar) {
                      bar.step(1);
                    }
                  }
                }));
        long gap = (long) (arrivals.nextGapSeconds() * 1e9);
        if (gap > 0) {
          Thread.sleep(Duration.ofNanos(gap));
        }
      }
      List<RequestOutput> out = new ArrayList<>(rows.size());
      for (Future<RequestOutput> f : fs) {
        out.add(join(f));
      }
      return Collections.unmodifiableList(out);
    }
  }

  private static RequestOutput join(Future<RequestOutput> f) throws InterruptedException {
    try {
      return f.get();
    } catch (ExecutionException e) {
      throw new IllegalStateException("a request thread failed", e.getCause());
    }
  }

  /** The first model {@code /v1/models} lists, as sglang.bench_serving asks when not told. */
  private static JsonNode listedModel(HttpClient http, BenchServeConfig.Target target)
      throws InterruptedException {
    String url = target.baseUrl() + "/v1/models";
    JsonNode list;
    try {
      list = getJson(http, url, target.apiKey());
    } catch (IOException e) {
      throw new BenchServeException(
          "cannot reach the server at "
              + target.baseUrl()
              + " (GET /v1/models: "
              + RequestClient.describe(e)
              + "); start it, or point --base-url (or --host and --port) at it, or pass --model",
          e);
    }
    JsonNode first = list.path("data").path(0);
    if (!first.path("id").isTextual()) {
      throw new BenchServeException(
          "the server at " + target.baseUrl() + " lists no model in /v1/models; pass --model NAME");
    }
    return first;
  }

  /**
   * A tokenizer from {@code --tokenizer}, else from {@code --model} or the served model's {@code
   * root} where either is a local directory holding tokenizer.json; null when none is found.
   */
  private static Tokenizer tokenizer(
      BenchServeConfig.Target target, JsonNode listed, PrintStream log) {
    List<Path> tries = new ArrayList<>();
    if (target.tokenizer() != null) {
      tries.add(target.tokenizer());
    } else {
      if (target.model() != null) {
        tries.add(Path.of(target.model()));
      }
      if (listed != null && listed.path("root").isTextual()) {
        tries.add(Path.of(listed.path("root").asText()));
      }
    }
    for (Path p : tries) {
      boolean explicit = target.tokenizer() != null;
      if (!explicit && !Files.isRegularFile(p.resolve("tokenizer.json"))) {
        continue;
      }
      try {
        Tokenizer t = Tokenizer.load(p);
        log.println("tokenizer: " + p);
        return t;
      } catch (TokenizerLoadException e) {
        if (explicit) {
          throw new BenchServeException("--tokenizer " + p + ": " + e.getMessage(), e);
        }
      }
    }
    return null;
  }

  /** The server's {@code /get_server_info} (or {@code /server_info}), or null if it has none. */
  private static JsonNode serverInfo(HttpClient http, BenchServeConfig.Target target)
      throws InterruptedException {
    for (String path : List.of("/get_server_info", "/server_info")) {
      try {
        return getJson(http, target.baseUrl() + path, target.apiKey());
      } catch (IOException e) {
        // not every server has it: try the next name, then report none
      }
    }
    return null;
  }

  private static JsonNode getJson(HttpClient http, String url, String apiKey)
      throws IOException, InterruptedException {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url)).timeout(CONNECT_TIMEOUT).GET();
    ApiKey.authorize(b, apiKey);
    HttpResponse<String> r = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    if (r.statusCode() != 200) {
      throw new IOException("HTTP " + r.statusCode() + ": " + abbreviate(r.body()));
    }
    return RequestBodies.JSON.readTree(r.body());
  }

  private static String abbreviate(String s) {
    String t = s.strip();
    return t.length() > 300 ? t.substring(0, 300) + "..." : t;
  }
}
