package dev.ringmaster.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.ringmaster.sim.model.ModelShape;
import dev.ringmaster.sim.serve.ServeOptions;
import dev.ringmaster.sim.serve.ServeReport;
import dev.ringmaster.sim.serve.ServeWorkload;
import dev.ringmaster.sim.serve.ServingConfig;
import dev.ringmaster.sim.serve.ServingSimulator;
import java.util.Locale;
import picocli.CommandLine.Option;

/**
 * {@code simulate}'s serving mode: a {@code bench serve} workload (its flag names) against the
 * server's scheduling flags (serve's names), predicted by {@link ServingSimulator}.
 */
final class SimulateServeOptions {
  @Option(
      names = "--num-prompts",
      description =
          "Predict a bench serve run of this many requests instead of one decode step (serving"
              + " mode).")
  Integer numPrompts;

  @Option(
      names = "--random-input-len",
      defaultValue = "1024",
      description = "Serving mode: prompt tokens of each request (default ${DEFAULT-VALUE}).")
  int inputLen;

  @Option(
      names = "--random-output-len",
      defaultValue = "1024",
      description = "Serving mode: tokens generated per request (default ${DEFAULT-VALUE}).")
  int outputLen;

  @Option(
      names = "--max-concurrency",
      description = "Serving mode: requests in flight at most (default: no limit).")
  Integer maxConcurrency;

  @Option(
      names = "--request-rate",
      defaultValue = "inf",
      description =
          "Serving mode: requests per second, Poisson arrivals (default ${DEFAULT-VALUE}).")
  String requestRate;

  @Option(
      names = "--gsp-system-prompt-len",
      defaultValue = "0",
      description =
          "Serving mode: tokens of a system prompt shared within each group, before each"
              + " request's own --random-input-len tokens (default ${DEFAULT-VALUE}).")
  int systemPromptLen;

  @Option(
      names = "--gsp-prompts-per-group",
      defaultValue = "1",
      description = "Serving mode: requests sharing one system prompt (default ${DEFAULT-VALUE}).")
  int promptsPerGroup;

  @Option(
      names = "--max-running-requests",
      description = "Serving mode: the server's running limit (default: the engine's rule).")
  Integer maxRunningRequests;

  @Option(
      names = "--mem-fraction-static",
      description =
          "Serving mode: share of GPU memory for weights plus KV cache (default: the engine's"
              + " rule from the GPU's memory).")
  Double memFractionStatic;

  @Option(names = "--disable-radix-cache", description = "Serving mode: no prefix cache.")
  boolean disableRadixCache;

  @Option(
      names = "--disable-overlap-schedule",
      description =
          "Serving mode: the server plans each step after the one before ends, so a request that"
              + " arrives during a step joins the next one (default: planned while it runs).")
  boolean disableOverlapSchedule;

  @Option(
      names = "--seed",
      defaultValue = "1",
      description = "Serving mode: seed of arrivals and request order (default ${DEFAULT-VALUE}).")
  long seed;

  boolean enabled() {
    return numPrompts != null;
  }

  /** Predicts and prints; returns the exit status. */
  int run(ModelShape shape, ServingSimulator sim, ServingConfig cfg, boolean json)
      throws Exception {
    double rate;
    try {
      rate =
          requestRate.equalsIgnoreCase("inf")
              ? Double.POSITIVE_INFINITY
              : Double.parseDouble(requestRate);
    } catch (NumberFormatException e) {
      throw new UserError(
          "--request-rate must be a number of requests per second or inf, got '"
              + requestRate
              + "'");
    }
    ServeWorkload w;
    ServeOptions opts;
    try {
      w =
          new ServeWorkload(
              numPrompts,
              systemPromptLen + inputLen,
              outputLen,
              maxConcurrency == null ? 0 : maxConcurrency,
              rate,
              systemPromptLen,
              promptsPerGroup,
              seed);
      opts =
          new ServeOptions(
              maxRunningRequests,
              memFractionStatic,
              !disableRadixCache,
              64,
              !disableOverlapSchedule);
    } catch (IllegalArgumentException e) {
      throw new UserError(e.getMessage());
    }
    ServeReport r = sim.predict(shape, cfg, opts, w);
    if (json) {
      ObjectMapper m =
          new ObjectMapper()
              .setPropertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
              .enable(SerializationFeature.INDENT_OUTPUT);
      System.out.println(m.writeValueAsString(r));
    } else {
      System.out.print(text(r));
    }
    return r.runs() ? 0 : SimulateCommand.DOES_NOT_RUN;
  }

  static String text(ServeReport r) {
    StringBuilder sb = new StringBuilder();
    if (!r.runs()) {
      for (String why : r.doesNotRun()) {
        sb.append("does not run: ").append(why).append(System.lineSeparator());
      }
      return sb.toString();
    }
    sb.append(
        String.format(
            Locale.ROOT,
            "bench serve prediction: %d requests in %.2f s%n"
                + "  output throughput   %,.1f tok/s (%.2f req/s)%n"
                + "  TTFT median / mean / p99   %.1f / %.1f / %.1f ms%n"
                + "  ITL median / mean          %.2f / %.2f ms%n"
                + "  TPOT median / mean         %.2f / %.2f ms%n"
                + "  running: limit %d, peak %d, mean %.1f; waiting peak %d, mean wait %.1f ms%n"
                + "  KV cache %,d tokens; preemptions %d; prompt tokens from the prefix cache"
                + " %.0f%%%n",
            r.completed(),
            r.durationS(),
            r.outputThroughput(),
            r.requestThroughput(),
            r.medianTtftMs(),
            r.meanTtftMs(),
            r.p99TtftMs(),
            r.medianItlMs(),
            r.meanItlMs(),
            r.medianTpotMs(),
            r.meanTpotMs(),
            r.maxRunningRequests(),
            r.peakRunning(),
            r.meanRunning(),
            r.peakWaiting(),
            r.meanQueueMs(),
            r.kvCapacityTokens(),
            r.preemptions(),
            100 * r.cachedPromptFraction()));
    for (String n : r.notes()) {
      sb.append("  note: ").append(n).append(System.lineSeparator());
    }
    return sb.toString();
  }
}
