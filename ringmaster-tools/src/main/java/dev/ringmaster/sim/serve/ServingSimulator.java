package dev.ringmaster.sim.serve;

import dev.ringmaster.engine.batch.ServingDefaults;
import dev.ringmaster.sim.hw.HardwareProfile;
import dev.ringmaster.sim.model.ModelShape;
import dev.ringmaster.sim.model.WeightInventory;
import java.util.List;

/**
 * Predicts a {@code bench serve} run: the memory plan gives the KV pool, the engine's rules ({@link
 * ServingDefaults}) the running limit, and {@link ServeScheduler} replays the engine's scheduler
 * step by step with step times from the forward model. A workload that does not fit is queued, as
 * the engine queues it, never run at full speed.
 */
public final class ServingSimulator {
  private final HardwareProfile hw;

  /** The serving model on a profile. */
  public ServingSimulator(HardwareProfile hw) {
    this.hw = hw;
  }

  /** Predicts {@code workload} against a server of {@code shape} run as {@code cfg}. */
  public ServeReport predict(
      ModelShape shape, ServingConfig cfg, ServeOptions opts, ServeWorkload workload) {
    WeightInventory inv = new WeightInventory(shape);
    int graphMax = cfg.cudaGraph() ? cfg.cudaGraphMaxBs() : 0;
    double fraction =
        opts.memFractionStatic() != null
            ? opts.memFractionStatic()
            : ServeOptions.defaultMemFractionStatic(
                hw.gpu().memoryBytes(), cfg.chunkedPrefill(), Math.max(graphMax, 1));
    MemoryPlan mem = MemoryPlanner.plan(inv, cfg, hw, fraction);
    long pool = mem.kvCapacityTokens();
    List<Integer> graphs =
        cfg.cudaGraph() ? CudaGraphSchedule.capturedSizes(cfg.cudaGraphMaxBs()) : List.of();
    int maxRunning =
        opts.maxRunningRequests() != null
            ? opts.maxRunningRequests()
            : ServingDefaults.maxRunningRequests(pool, cfg.contextLen(), graphs);
    int request = workload.inputLen() + workload.outputLen();
    if (!mem.fits() || pool <= 0) {
      return ServeScheduler.doesNotRun(
          pool,
          maxRunning,
          String.format(
              "no KV cache: weights %.1f GB leave nothing under --mem-fraction-static %.3f of the"
                  + " %.1f GB GPU (or buffers fill it); lower the weights per GPU (--tp-size,"
                  + " --quantization) or raise --mem-fraction-static",
              mem.weightsBytes() / 1e9, fraction, mem.totalBytes() / 1e9));
    }
    if (request > pool) {
      return ServeScheduler.doesNotRun(
          pool,
          maxRunning,
          "a request of "
              + request
              + " tokens (prompt and output) exceeds the KV cache's "
              + pool
              + " tokens");
    }
    StepCosts costs = new SimulatedStepCosts(hw, inv, cfg);
    return new ServeScheduler(workload, opts, pool, maxRunning, graphMax, cfg.chunkedPrefill())
        .run(costs);
  }
}
