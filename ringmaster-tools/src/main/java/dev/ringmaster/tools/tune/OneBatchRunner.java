package dev.ringmaster.tools.tune;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Runs one engine-only trial: a child {@code bench one-batch --json} with the trial's flags per
 * repeat (each a fresh process: the load is part of nothing measured, the JIT and caches start cold
 * every time alike), limited to the start-up plus the run timeout. The objective is the batch's
 * decode or prefill tokens per second; a refused flag, a crash, an out-of-memory or a timeout
 * becomes the trial's evidence.
 */
final class OneBatchRunner implements TrialExecutor {
  private static final ObjectMapper JSON = new ObjectMapper();

  private final TuneConfig config;

  OneBatchRunner(TuneConfig config) {
    this.config = config;
  }

  @Override
  public TrialResult run(Trial trial) throws InterruptedException {
    long t0 = System.nanoTime();
    List<String> cmd = config.oneBatchCommand(trial);
    Path logs = config.out().resolve("logs");
    Path first = logs.resolve("trial-" + trial.number() + ".log");
    List<Map<String, Double>> runs = new ArrayList<>();
    Outcome o = null;
    for (int k = 1; k <= config.repeats() && o == null; k++) {
      Path log = k == 1 ? first : logs.resolve("trial-" + trial.number() + "-repeat-" + k + ".log");
      Object r = once(cmd, log);
      if (r instanceof Outcome failed) {
        o = config.repeats() == 1 ? failed : failed.inRepeat(k, config.repeats());
      } else {
        @SuppressWarnings("unchecked")
        Map<String, Double> m = (Map<String, Double>) r;
        runs.add(m);
      }
    }
    if (o == null) {
      o = Outcome.ok(runs);
    }
    return o.result(trial, (System.nanoTime() - t0) / 1e9, cmd, first);
  }

  /** One child run: its metrics (with the objective), or the {@link Outcome} of a failure. */
  private Object once(List<String> cmd, Path log) throws InterruptedException {
    Duration limit = config.startupTimeout().plus(config.runTimeout());
    try (ServerProcess p = ServerProcess.start(cmd, log)) {
      if (!p.awaitExit(limit)) {
        return Outcome.timeout(
            "run",
            "run timeout",
            "bench one-batch not done after "
                + limit.toSeconds()
                + " s; "
                + FailureCause.lastError(p.tail()));
      }
      int code = p.exitCode();
      List<String> tail = p.tail();
      if (code != 0) {
        return Outcome.failed(
            code == FailureCause.USAGE_EXIT ? "start-up" : "run",
            FailureCause.classify(code, tail),
            code,
            FailureCause.lastError(tail));
      }
      Map<String, Double> m = metrics(tail);
      if (m == null) {
        return Outcome.failed(
            "run", "crashed", code, "bench one-batch printed no JSON result (see " + log + ")");
      }
      return m;
    } catch (IOException e) {
      return Outcome.failed("start-up", "crashed", null, "cannot start: " + e.getMessage());
    }
  }

  /** The figures of the last JSON line's first result, or null when there is none. */
  private Map<String, Double> metrics(List<String> lines) {
    for (int i = lines.size() - 1; i >= 0; i--) {
      String l = lines.get(i).strip();
      if (!l.startsWith("{")) {
        continue;
      }
      JsonNode results;
      try {
        results = JSON.readTree(l).path("results");
      } catch (IOException e) {
        continue;
      }
      if (!results.isArray() || results.isEmpty()) {
        return null;
      }
      JsonNode r = results.get(0);
      Map<String, Double> m = new LinkedHashMap<>();
      double prefill = r.path("prefill_tokens_per_s").asDouble(Double.NaN);
      double decode = r.path("decode_tokens_per_s").asDouble(Double.NaN);
      m.put(
          Outcome.OBJECTIVE,
          config.objective().kind() == Objective.Kind.PREFILL ? prefill : decode);
      m.put("prefill_tokens_per_s", prefill);
      m.put("decode_tokens_per_s", decode);
      m.put("prefill_ms", r.path("prefill_ms").asDouble(Double.NaN));
      m.put("decode_median_ms", r.path("decode_median_ms").asDouble(Double.NaN));
      return m;
    }
    return null;
  }
}
