package dev.ringmaster.tools.tune;

import dev.ringmaster.tools.benchserve.BenchServe;
import dev.ringmaster.tools.benchserve.BenchServeConfig;
import dev.ringmaster.tools.benchserve.BenchServeException;
import dev.ringmaster.tools.benchserve.BenchServeResult;
import dev.ringmaster.tools.benchserve.ServingMetrics;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Runs one trial: a child {@code serve} with the trial's flags, then the {@code bench serve} client
 * against it in this process once per warm-up run and per repeat, then the server stopped. The
 * repeats share the server: they measure the run-to-run noise of the load, not the start-up's, and
 * the warm-up runs before them keep a fresh server's slower first run out of the figures. Nothing a
 * trial does can end the tune: every way it fails becomes a {@link TrialResult} naming the phase
 * and the cause.
 */
final class TrialRunner implements TrialExecutor {
  private final TuneConfig config;

  TrialRunner(TuneConfig config) {
    this.config = config;
  }

  @Override
  public TrialResult run(Trial trial) throws InterruptedException {
    long t0 = System.nanoTime();
    List<String> cmd = config.serverCommand(trial);
    Path log = config.out().resolve("logs").resolve("trial-" + trial.number() + ".log");
    Outcome o;
    try (ServerProcess server = ServerProcess.start(cmd, log)) {
      o = serveAndMeasure(server, log);
    } catch (IOException e) {
      o = Outcome.failed("start-up", "crashed", null, "cannot start the server: " + e.getMessage());
    }
    return o.result(trial, (System.nanoTime() - t0) / 1e9, cmd, log);
  }

  private Outcome serveAndMeasure(ServerProcess server, Path log) throws InterruptedException {
    String url;
    try {
      url = server.awaitUrl(config.startupTimeout());
    } catch (TimeoutException e) {
      return Outcome.timeout(
          "start-up",
          "start-up timeout",
          "not listening after "
              + config.startupTimeout().toSeconds()
              + " s; "
              + FailureCause.lastError(server.tail()));
    }
    if (url == null) {
      int code = server.exitCode();
      List<String> tail = server.tail();
      return Outcome.failed(
          "start-up", FailureCause.classify(code, tail), code, FailureCause.lastError(tail));
    }
    Path clientLog =
        log.resolveSibling(log.getFileName().toString().replace(".log", "-client.log"));
    List<Map<String, Double>> runs = new ArrayList<>();
    try (PrintStream clientOut = clientLog(clientLog)) {
      int warmups = config.workload().warmupRuns();
      for (int k = 1; k <= warmups; k++) {
        clientOut.printf(Locale.ROOT, "# warm-up run %d of %d (not measured)%n", k, warmups);
        if (benchOnce(server, url, clientOut) instanceof Outcome failed) {
          return failed.inWarmup(k, warmups);
        }
      }
      for (int k = 1; k <= config.repeats(); k++) {
        clientOut.printf(Locale.ROOT, "# repeat %d of %d%n", k, config.repeats());
        Object r = benchOnce(server, url, clientOut);
        if (r instanceof Outcome failed) {
          return config.repeats() == 1 ? failed : failed.inRepeat(k, config.repeats());
        }
        @SuppressWarnings("unchecked")
        Map<String, Double> m = (Map<String, Double>) r;
        runs.add(m);
      }
    } catch (IOException e) {
      return Outcome.failed(
          "run", "crashed", null, "cannot write " + clientLog + ": " + e.getMessage());
    }
    return Outcome.ok(runs);
  }

  /**
   * One benchmark run: its metrics (with {@code objective}), or the {@link Outcome} of a failure.
   */
  private Object benchOnce(ServerProcess server, String url, PrintStream clientOut)
      throws InterruptedException {
    try (ExecutorService ex = Executors.newVirtualThreadPerTaskExecutor()) {
      Future<BenchServeResult> f = ex.submit(() -> BenchServe.run(benchConfig(url), clientOut));
      BenchServeResult r;
      try {
        r = f.get(config.runTimeout().toMillis(), TimeUnit.MILLISECONDS);
      } catch (TimeoutException e) {
        f.cancel(true);
        return Outcome.timeout(
            "run",
            "run timeout",
            "benchmark not done after " + config.runTimeout().toSeconds() + " s");
      } catch (ExecutionException e) {
        return midRunFailure(server, e.getCause());
      }
      if (!server.alive()) {
        return midRunFailure(server, null);
      }
      long failed = r.outputs().stream().filter(x -> !x.success()).count();
      if (failed > 0) {
        return Outcome.failed(
            "run",
            "requests failed",
            null,
            failed + " of " + r.outputs().size() + " requests failed: " + r.firstError());
      }
      return metrics(r, config.objective());
    }
  }

  private static Outcome midRunFailure(ServerProcess server, Throwable clientError)
      throws InterruptedException {
    if (!server.alive()) {
      int code = server.exitCode();
      List<String> tail = server.tail();
      return Outcome.failed(
          "run", FailureCause.classify(code, tail), code, FailureCause.lastError(tail));
    }
    String msg =
        clientError instanceof BenchServeException
            ? clientError.getMessage()
            : String.valueOf(clientError);
    return Outcome.failed("run", "requests failed", null, msg.lines().findFirst().orElse(msg));
  }

  private BenchServeConfig benchConfig(String url) {
    return new BenchServeConfig(
        new BenchServeConfig.Target("openai", url, null, null, config.model(), null),
        config.workload().dataset(),
        config.workload().load(),
        "tune",
        true);
  }

  private static PrintStream clientLog(Path p) throws IOException {
    OutputStream os = Files.newOutputStream(p);
    return new PrintStream(os, true, StandardCharsets.UTF_8);
  }

  private static Map<String, Double> metrics(BenchServeResult r, Objective objective) {
    ServingMetrics m = r.metrics();
    Map<String, Double> out = new LinkedHashMap<>();
    out.put(Outcome.OBJECTIVE, objective.value(r));
    out.put("output_throughput", m.outputThroughput());
    out.put("request_throughput", m.requestThroughput());
    out.put("total_throughput", m.totalThroughput());
    out.put("median_ttft_ms", m.ttft().median());
    out.put("median_tpot_ms", m.tpot().median());
    out.put("median_e2e_ms", m.e2e().median());
    out.put("goodput_throughput", objective.goodput(r));
    out.put("slo_attainment", objective.attainment(r));
    out.put("duration_s", m.durationS());
    return out;
  }
}
