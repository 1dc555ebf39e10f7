package dev.ringmaster.sim.calibrate;

import dev.ringmaster.engine.bench.OneBatchBenchmark;
import dev.ringmaster.sim.hw.GpuSpec;
import dev.ringmaster.sim.hw.HardwareProfile;
import dev.ringmaster.sim.hw.Profiles;
import dev.ringmaster.sim.model.ModelShape;
import dev.ringmaster.sim.model.OpCost;
import dev.ringmaster.sim.model.QuantScheme;
import dev.ringmaster.sim.model.StepOps;
import dev.ringmaster.sim.model.StepShape;
import dev.ringmaster.sim.model.WeightInventory;
import dev.ringmaster.sim.serve.ServingConfig;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The rooflines of a {@code bench one-batch} run on one rank, and the share of each that the run
 * reached:
 *
 * <ul>
 *   <li>decode: the bytes one decode step moves (every weight the step reads, the routed experts
 *       the batch touches on average, the KV cache at the middle of the decode) over the datasheet
 *       memory bandwidth, or its FLOPs over the bf16 tensor rate where that is longer;
 *   <li>prefill: the prompts' FLOPs over the bf16 tensor rate, or one pass over the prefill's bytes
 *       where that is longer.
 * </ul>
 *
 * Datasheet rates, not measured ones: on an H200 a device copy reaches 0.88 of the 4.8 TB/s.
 */
public final class OneBatchRoofline {
  private OneBatchRoofline() {}

  /**
   * One batch size's rooflines.
   *
   * @param batchSize sequences
   * @param decodeGb bytes of one decode step, GB
   * @param decodeTokensPerS decode roofline, tokens/s over the batch
   * @param decodeShare measured decode tokens/s over the roofline
   * @param prefillTokensPerS prefill roofline, tokens/s
   * @param prefillShare measured prefill tokens/s over the roofline
   */
  public record Row(
      int batchSize,
      double decodeGb,
      double decodeTokensPerS,
      double decodeShare,
      double prefillTokensPerS,
      double prefillShare) {}

  /** The rows of {@code run} for the model {@code shape} on {@code gpu}. */
  public static List<Row> of(MeasurementFile.OneBatch run, ModelShape shape, GpuSpec gpu) {
    return of(run, shape, gpu, OneBatchSteps.quantOf(run));
  }

  /** The rows of {@code run} for {@code shape} on {@code gpu}, its weights in {@code quant}. */
  public static List<Row> of(
      MeasurementFile.OneBatch run, ModelShape shape, GpuSpec gpu, QuantScheme quant) {
    WeightInventory inventory = new WeightInventory(shape);
    double bandwidth = gpu.memoryBandwidth();
    double flopRate = gpu.flopsFor("bf16");
    List<Row> rows = new ArrayList<>();
    for (OneBatchBenchmark.Result r : run.results()) {
      ServingConfig cfg = OneBatchSteps.servingConfig(run, r, quant);
      StepOps ops = new StepOps(inventory, cfg.quant(), cfg.sharding());
      double[] decode =
          totals(ops.forward(StepShape.decode(r.batchSize(), 1, cfg.contextLen(), cfg.kvDtype())));
      double decodeSeconds = Math.max(decode[0] / bandwidth, decode[1] / flopRate);
      double decodeRoof = r.batchSize() / decodeSeconds;
      // Each prompt is its own sequence: its attention FLOPs are a prompt's, and the weights are
      // read at least once for the whole batch.
      double[] prompt = totals(ops.forward(StepShape.prefill(r.inputLen(), 0, cfg.kvDtype())));
      double prefillSeconds = Math.max(prompt[0] / bandwidth, r.batchSize() * prompt[1] / flopRate);
      double prefillRoof = (double) r.batchSize() * r.inputLen() / prefillSeconds;
      rows.add(
          new Row(
              r.batchSize(),
              decode[0] / 1e9,
              decodeRoof,
              r.decodeTokensPerS() / decodeRoof,
              prefillRoof,
              r.prefillTokensPerS() / prefillRoof));
    }
    return rows;
  }

  /**
   * The built-in GPU profile whose GPU a device description names (e.g. "NVIDIA H200, sm_90, 132
   * SMs, 139.8 GiB"), if there is one.
   */
  public static Optional<HardwareProfile> profileFor(String deviceDescription) {
    if (deviceDescription == null) {
      return Optional.empty();
    }
    for (String name : Profiles.BUILT_IN) {
      HardwareProfile p = Profiles.load(name);
      String gpuName = p.gpu().name();
      if (!name.startsWith("cpu")
          && (deviceDescription.startsWith(gpuName + ",") || deviceDescription.equals(gpuName))) {
        return Optional.of(p);
      }
    }
    return Optional.empty();
  }

  private static double[] totals(List<OpCost> ops) {
    double bytes = 0;
    double flops = 0;
    for (OpCost op : ops) {
      bytes += op.bytes();
      flops += op.flops();
    }
    return new double[] {bytes, flops};
  }
}
