package dev.ringmaster.sim.calibrate;

import dev.ringmaster.engine.bench.OneBatchBenchmark;
import dev.ringmaster.sim.calibrate.Measurements.KernelSample;
import dev.ringmaster.sim.hw.HardwareProfile;
import dev.ringmaster.sim.model.Category;
import dev.ringmaster.sim.model.ModelShape;
import dev.ringmaster.sim.model.OpCost;
import dev.ringmaster.sim.model.QuantScheme;
import dev.ringmaster.sim.model.StepShape;
import dev.ringmaster.sim.model.WeightInventory;
import dev.ringmaster.sim.serve.ForwardTime;
import dev.ringmaster.sim.serve.ForwardTimer;
import dev.ringmaster.sim.serve.ServingConfig;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Turns the op-group breakdown of {@code bench one-batch --profile} ({@code profile_ms}: one eager
 * decode step per batch size, GPU milliseconds per group) into kernel samples: for each kind the
 * calibration fits an efficiency for (routed experts, attention over the cache, dense weights), the
 * measured time of the engine's groups beside the bytes and flops the simulator counts for the same
 * step, and the kernels the simulator launches for them. Eagerly launched steps charge launch gaps
 * and each kernel's fixed latency to the group; where the runs differ in bytes per kernel (several
 * tensor-parallel sizes) the calibration fits that per-kernel time apart from the bandwidth.
 *
 * <p>A profiled step runs the production kernel sequence. Where the shared experts run on the side
 * stream (the smallest decode steps) the profile has no {@code moe.shared_experts} group: their
 * time is inside {@code moe.routed_and_shared_experts}, so their bytes count with the routed
 * experts there.
 */
public final class OneBatchKernels {
  /** The engine's op groups of one kind (keys of {@code profile_ms}, see {@code DecoderStack}). */
  private static final Map<String, List<String>> GROUPS =
      Map.of(
          "moe", List.of("moe.routed_experts", "moe.routed_and_shared_experts"),
          "attention", List.of("mla.attention"),
          "gemm",
              List.of(
                  "mla.q_kv_rope_append",
                  "mla.o_proj",
                  "moe.shared_experts",
                  "mlp.dense",
                  "lm_head"));

  /** The simulator's categories each kind sums. */
  private static final Map<String, Category> CATEGORY =
      Map.of("moe", Category.MOE, "attention", Category.ATTENTION, "gemm", Category.WEIGHTS);

  private OneBatchKernels() {}

  /**
   * Kernel samples of every profiled decode step of {@code run} (none when the run was not
   * profiled), with bytes and flops of {@code shape} as {@code hw} counts them.
   */
  public static List<KernelSample> samples(
      MeasurementFile.OneBatch run, ModelShape shape, HardwareProfile hw) {
    List<KernelSample> out = new ArrayList<>();
    ForwardTimer timer = new ForwardTimer(hw);
    WeightInventory inv = new WeightInventory(shape);
    QuantScheme quant = OneBatchSteps.quantOf(run);
    for (OneBatchBenchmark.Result r : run.results()) {
      Map<String, Double> groups = r.profileMs().get("decode bs=" + r.batchSize());
      if (groups == null) {
        continue; // not profiled, or profiled at a padded batch size the result does not name
      }
      ServingConfig cfg = OneBatchSteps.servingConfig(run, r, quant);
      ForwardTime ft =
          timer.time(
              inv, cfg, StepShape.decode(cfg.batch(), 1, cfg.contextLen(), cfg.kvDtype()), false);
      boolean sharedOverlapped = groups.containsKey("moe.routed_and_shared_experts");
      for (Map.Entry<String, List<String>> kind : GROUPS.entrySet()) {
        double ms = 0;
        for (String g : kind.getValue()) {
          ms += groups.getOrDefault(g, 0.0);
        }
        double flops = 0;
        double bytes = 0;
        int launches = 0;
        String dtype = "bf16";
        for (OpCost op : ft.ops()) {
          Category category =
              sharedOverlapped && op.name().startsWith("moe.shared.")
                  ? Category.MOE
                  : op.category();
          if (category == CATEGORY.get(kind.getKey()) && op.kind() != OpCost.Kind.MISC) {
            flops += op.flops();
            bytes += op.bytes();
            launches += op.kernels();
            dtype = op.computeDtype();
          }
        }
        if (ms > 0 && bytes > 0) {
          out.add(
              new KernelSample(
                  kind.getValue().getFirst() + " (batch " + r.batchSize() + ")",
                  kind.getKey(),
                  dtype,
                  flops,
                  bytes,
                  ms * 1000,
                  launches));
        }
      }
    }
    return out;
  }
}
