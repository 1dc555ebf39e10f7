package dev.ringmaster.server.metrics;

import dev.ringmaster.engine.batch.BatchEngine;
import dev.ringmaster.engine.batch.EngineStats;
import dev.ringmaster.engine.batch.StepTimes;
import dev.ringmaster.engine.spec.SpeculationSnapshot;
import dev.ringmaster.server.generation.ChoiceEvent;
import dev.ringmaster.server.generation.LatencyObserver;
import io.prometheus.metrics.config.EscapingScheme;
import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.CounterWithCallback;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.function.ToDoubleFunction;

/**
 * The server's metrics, in a registry of its own (several servers can share a JVM, as in tests).
 * Counters count engine sequences: a request with {@code n} choices counts its prompt {@code n}
 * times, since each choice prefills it.
 */
public final class ServerMetrics implements LatencyObserver {
  /** Content type of {@link #scrape}. */
  public static final String CONTENT_TYPE = PrometheusTextFormatWriter.CONTENT_TYPE;

  /**
   * Histogram bounds in seconds: 5 ms apart from 10 to 60 ms, where a GPU's time to first token at
   * low load falls, so a quantile read from the buckets is close to the truth there.
   */
  private static final double[] LATENCY_BOUNDS = {
    0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.025, 0.03, 0.035, 0.04, 0.045,
    0.05, 0.06, 0.08, 0.1, 0.15, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 15, 20, 30, 40, 60, 120, 300
  };

  /** The stages of {@code per_stage_req_latency_seconds}, in the order a request passes them. */
  public static final java.util.List<String> STAGES =
      java.util.List.of(
          "request_process", "prefill_waiting", "prefill_forward", "first_token_emit");

  private final PrometheusRegistry registry = new PrometheusRegistry();
  private final String model;
  private final Counter promptTokens;
  private final Counter generationTokens;
  private final Counter requests;
  private final Counter aborted;
  private final Counter failed;
  private final GenerationThroughput throughput = new GenerationThroughput();
  private final Histogram ttft;
  private final Histogram itl;
  private final Histogram e2e;
  private final Histogram queueTime;
  private final Histogram stages;
  private final Counter prefillSteps;

  /** Metrics for a served model and its engine. */
  public ServerMetrics(String modelName, BatchEngine engine) {
    this.model = modelName;
    promptTokens = counter("prompt_tokens", "Prompt tokens processed.");
    generationTokens = counter("generation_tokens", "Generated tokens.");
    requests = counter("num_requests", "Requests (engine sequences) finished.");
    aborted = counter("num_aborted_requests", "Requests cancelled before finishing.");
    failed = counter("num_failed_requests", "Requests that failed inside the engine.");
    ttft = histogram("time_to_first_token_seconds", "Time to first token.");
    itl = histogram("inter_token_latency_seconds", "Time between consecutive tokens.");
    e2e = histogram("e2e_request_latency_seconds", "Time from submission to the last token.");
    queueTime =
        histogram(
            "queue_time_seconds",
            "Time from submission to the engine to the first step with the request's prompt.");
    stages =
        Histogram.builder()
            .name(name("per_stage_req_latency_seconds"))
            .help(
                "Time to first token by stage: request_process (HTTP arrival to engine"
                    + " submission), prefill_waiting (to the first prompt step), prefill_forward (to"
                    + " the first token on the host), first_token_emit (to the first response chunk"
                    + " carrying it written; streams only).")
            .classicOnly()
            .classicUpperBounds(LATENCY_BOUNDS)
            .labelNames("model_name", "stage")
            .register(registry);
    prefillSteps =
        counter("prefill_steps", "Forward steps the requests' prefills took (chunks, retries).");
    for (String stage : STAGES) {
      stages.labelValues(model, stage);
    }
    queueTime.labelValues(model);
    prefillSteps.labelValues(model);
    // Touch every label set so each series is exported (as 0) before the first request.
    for (Counter c : new Counter[] {promptTokens, generationTokens, requests, aborted, failed}) {
      c.labelValues(model);
    }
    for (Histogram h : new Histogram[] {ttft, itl, e2e}) {
      h.labelValues(model);
    }
    gauge("num_running_reqs", "Requests in the running batch.", engine, s -> s.running());
    gauge("num_queue_reqs", "Requests waiting for admission.", engine, s -> s.queued());
    gauge("token_usage", "Fraction of the KV cache in use.", engine, EngineStats::kvUsage);
    gauge(
        "num_used_tokens",
        "KV cache token positions reserved.",
        engine,
        s -> (double) s.usedBlocks() * s.pageSize());
    gauge(
        "max_total_num_tokens",
        "KV cache capacity in token positions.",
        engine,
        s -> (double) s.totalBlocks() * s.pageSize());
    gauge(
        "cache_hit_rate",
        "Fraction of admitted prompt tokens taken from the prefix (radix) cache, 0..1.",
        engine,
        EngineStats::cacheHitRate);
    gauge(
        "radix_cache_pages",
        "KV pages the prefix cache holds (counted in num_used_tokens).",
        engine,
        s -> s.cachedPages());
    CounterWithCallback.builder()
        .name(name("cached_tokens"))
        .help("Prompt tokens taken from the prefix cache instead of computed.")
        .labelNames("model_name")
        .callback(cb -> cb.call(engine.stats().cachedTokens(), model))
        .register(registry);
    stepCounter("engine_steps", "Forward steps run.", engine, t -> t.steps());
    stepCounter(
        "engine_overlapped_steps",
        "Steps planned while the previous step ran and used as planned.",
        engine,
        t -> t.overlapped());
    stepCounter(
        "step_host_seconds",
        "Engine time between a step's tokens coming back and the next step's submission.",
        engine,
        StepTimes::hostSeconds);
    stepCounter(
        "step_build_seconds",
        "Time spent planning batches and building their inputs.",
        engine,
        StepTimes::buildSeconds);
    stepCounter(
        "step_forward_seconds",
        "Time from a step's submission to its tokens coming back.",
        engine,
        StepTimes::forwardSeconds);
    stepGauge(
        "step_host_time_ms",
        "Mean host time per step over the recent steps, milliseconds.",
        engine,
        StepTimes::recentHostMillis);
    stepGauge(
        "step_host_time_share",
        "Host time as a share of the recent steps (host plus forward), 0..1.",
        engine,
        StepTimes::recentHostShare);
    if (engine.speculation().isPresent()) {
      speculationMetrics(engine);
    }
  }

  /** The speculation series, exported only when the engine speculates. */
  private void speculationMetrics(BatchEngine engine) {
    specGauge(
        "spec_accept_length",
        "Mean tokens one verified draft yielded (accepted drafts plus the target's own).",
        engine,
        SpeculationSnapshot::acceptLength);
    specGauge(
        "spec_enabled_fraction",
        "Share of decode steps in which the speculative policy drafted, 0..1.",
        engine,
        SpeculationSnapshot::enabledFraction);
    specGauge(
        "spec_enabled",
        "1 when the latest decode step speculated, else 0.",
        engine,
        s -> s.enabled() ? 1 : 0);
    CounterWithCallback.builder()
        .name(name("spec_draft_tokens"))
        .help("Draft tokens verified.")
        .labelNames("model_name")
        .callback(cb -> cb.call(engine.speculation().orElseThrow().draftTokens(), model))
        .register(registry);
    CounterWithCallback.builder()
        .name(name("spec_accepted_tokens"))
        .help("Draft tokens the target accepted.")
        .labelNames("model_name")
        .callback(cb -> cb.call(engine.speculation().orElseThrow().acceptedTokens(), model))
        .register(registry);
  }

  private void specGauge(
      String suffix, String help, BatchEngine engine, ToDoubleFunction<SpeculationSnapshot> value) {
    GaugeWithCallback.builder()
        .name(name(suffix))
        .help(help)
        .labelNames("model_name")
        .callback(cb -> cb.call(value.applyAsDouble(engine.speculation().orElseThrow()), model))
        .register(registry);
  }

  private void stepCounter(
      String suffix, String help, BatchEngine engine, ToDoubleFunction<StepTimes> value) {
    CounterWithCallback.builder()
        .name(name(suffix))
        .help(help)
        .labelNames("model_name")
        .callback(cb -> cb.call(value.applyAsDouble(engine.stepTimes()), model))
        .register(registry);
  }

  private void stepGauge(
      String suffix, String help, BatchEngine engine, ToDoubleFunction<StepTimes> value) {
    GaugeWithCallback.builder()
        .name(name(suffix))
        .help(help)
        .labelNames("model_name")
        .callback(cb -> cb.call(value.applyAsDouble(engine.stepTimes()), model))
        .register(registry);
  }

  private static String name(String suffix) {
    return "ringmaster:" + suffix;
  }

  private Counter counter(String suffix, String help) {
    return Counter.builder()
        .name(name(suffix))
        .help(help)
        .labelNames("model_name")
        .register(registry);
  }

  private Histogram histogram(String suffix, String help) {
    return Histogram.builder()
        .name(name(suffix))
        .help(help)
        .classicOnly()
        .classicUpperBounds(LATENCY_BOUNDS)
        .labelNames("model_name")
        .register(registry);
  }

  private void gauge(
      String suffix, String help, BatchEngine engine, ToDoubleFunction<EngineStats> value) {
    GaugeWithCallback.builder()
        .name(name(suffix))
        .help(help)
        .labelNames("model_name")
        .callback(cb -> cb.call(value.applyAsDouble(engine.stats()), model))
        .register(registry);
  }

  @Override
  public void firstToken(double seconds) {
    ttft.labelValues(model).observe(seconds);
    throughput.token(System.nanoTime());
  }

  @Override
  public void interToken(double seconds) {
    itl.labelValues(model).observe(seconds);
    throughput.token(System.nanoTime());
  }

  @Override
  public void requestProcessed(double seconds) {
    stages.labelValues(model, "request_process").observe(seconds);
  }

  @Override
  public void prefilled(double waitSeconds, double forwardSeconds, int steps) {
    queueTime.labelValues(model).observe(waitSeconds);
    stages.labelValues(model, "prefill_waiting").observe(waitSeconds);
    stages.labelValues(model, "prefill_forward").observe(forwardSeconds);
    prefillSteps.labelValues(model).inc(steps);
  }

  @Override
  public void firstTokenEmitted(double seconds) {
    stages.labelValues(model, "first_token_emit").observe(seconds);
  }

  /** Output tokens per second of the most recent generation (SGLang's last_gen_throughput). */
  public double lastGenerationThroughput() {
    return throughput.tokensPerSecond();
  }

  @Override
  public void finished(ChoiceEvent.Done done) {
    promptTokens.labelValues(model).inc(done.promptTokens());
    generationTokens.labelValues(model).inc(done.completionTokens());
    requests.labelValues(model).inc();
    e2e.labelValues(model).observe(done.e2eSeconds());
    switch (done.reason()) {
      case ABORT -> aborted.labelValues(model).inc();
      case ERROR -> failed.labelValues(model).inc();
      default -> {}
    }
  }

  /** The Prometheus text exposition of every metric. */
  public byte[] scrape() {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try {
      PrometheusTextFormatWriter.create()
          .write(out, registry.scrape(), EscapingScheme.UNDERSCORE_ESCAPING);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out.toByteArray();
  }
}
