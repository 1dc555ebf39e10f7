package dev.ringmaster.tools.tune;

import dev.ringmaster.sim.hw.AllreduceAlgorithm;
import dev.ringmaster.sim.hw.HardwareProfile;
import dev.ringmaster.sim.model.ModelShape;
import dev.ringmaster.sim.model.QuantScheme;
import dev.ringmaster.sim.serve.A2aBackend;
import dev.ringmaster.sim.serve.Prediction;
import dev.ringmaster.sim.serve.ServingConfig;
import dev.ringmaster.sim.serve.Simulator;
import java.util.Locale;
import java.util.Optional;
import java.util.OptionalDouble;

/**
 * The simulator's view of a point: whether it runs on the hardware profile at all (the memory
 * planner and the configuration checks; {@code does not run: reason}) and its predicted objective,
 * for {@code --simulate-first}. A point is simulated as the engine would serve it: its TP and EP
 * sizes, all-to-all backend, allreduce, KV dtype, CUDA graphs and chunk from its flags; the batch
 * is the workload's concurrency (prompts, capped by {@code --max-concurrency} and {@code
 * --max-running-requests}) or the one-batch size, the context the input plus output length. The
 * simulator predicts decode and prefill speed, not SLOs: goodput is predicted as throughput.
 */
public final class SimulatorJudge implements PointCheck, TrialPredictor {
  private final HardwareProfile hw;
  private final ModelShape shape;
  private final Simulator sim;

  /** Judges points of {@code shape} on {@code hw}. */
  public SimulatorJudge(HardwareProfile hw, ModelShape shape) {
    this.hw = hw;
    this.shape = shape;
    this.sim = new Simulator(hw);
  }

  @Override
  public String cause() {
    return "does not run";
  }

  @Override
  public Optional<String> reject(TuneConfig config, Trial trial) {
    ServingConfig cfg;
    try {
      cfg = servingConfig(config, trial);
    } catch (IllegalArgumentException e) {
      return Optional.empty(); // a value the simulator cannot read is serve's to judge
    }
    try {
      Prediction p = sim.predict(shape, cfg);
      return p.runs()
          ? Optional.empty()
          : Optional.of("simulator on " + hw.name() + ": " + String.join("; ", p.doesNotRun()));
    } catch (IllegalArgumentException e) {
      return Optional.of("simulator on " + hw.name() + ": " + e.getMessage());
    }
  }

  @Override
  public OptionalDouble predict(TuneConfig config, Trial trial) {
    Prediction p;
    try {
      ServingConfig cfg = servingConfig(config, trial);
      p = sim.predict(shape, cfg);
    } catch (IllegalArgumentException e) {
      return OptionalDouble.empty();
    }
    if (!p.runs()) {
      return OptionalDouble.empty();
    }
    int input = config.isOneBatch() ? config.oneBatch().inputLen() : inputLen(config);
    int output = config.isOneBatch() ? config.oneBatch().outputLen() : outputLen(config);
    return OptionalDouble.of(
        switch (config.objective().kind()) {
          case THROUGHPUT, GOODPUT, DECODE -> p.decodeTokensPerS();
          case PREFILL -> input * 1000.0 / p.prefillMs();
          case LATENCY -> p.prefillMs() + output * p.perTokenMs();
        });
  }

  @Override
  public String describe() {
    return "the simulator on the " + hw.name() + " profile";
  }

  /** The configuration the simulator predicts for {@code trial}. */
  static ServingConfig servingConfig(TuneConfig config, Trial trial) {
    TrialFlags f = TrialFlags.of(config, trial);
    int input = config.isOneBatch() ? config.oneBatch().inputLen() : inputLen(config);
    int output = config.isOneBatch() ? config.oneBatch().outputLen() : outputLen(config);
    String kv = f.get("--kv-cache-dtype", "auto").toLowerCase(Locale.ROOT);
    String ar = f.get("--allreduce", "auto");
    return new ServingConfig(
        f.intValue("--tp-size", "--tp", 1),
        f.intValue("--ep-size", "--ep", 1),
        A2aBackend.parse(f.get("--moe-a2a-backend", "none")),
        AllreduceAlgorithm.parse(ar.equals("auto") ? "nccl" : ar),
        QuantScheme.preset("bf16"),
        kv.startsWith("fp8") ? "fp8" : "bf16",
        batch(config, f),
        input + output,
        !f.on("--disable-cuda-graph"),
        f.intValue("--cuda-graph-max-bs", null, 160),
        f.intValue("--chunked-prefill-size", null, 8192),
        null);
  }

  private static int batch(TuneConfig config, TrialFlags f) {
    if (config.isOneBatch()) {
      return config.oneBatch().batchSize();
    }
    int b = config.workload().dataset().numPrompts();
    Integer conc = config.workload().load().maxConcurrency();
    if (conc != null) {
      b = Math.min(b, conc);
    }
    int running = f.intValue("--max-running-requests", null, 0);
    return Math.max(1, running > 0 ? Math.min(b, running) : b);
  }

  private static int inputLen(TuneConfig config) {
    return config.workload().dataset().randomInputLen();
  }

  private static int outputLen(TuneConfig config) {
    return config.workload().dataset().randomOutputLen();
  }
}
