package dev.ringmaster.sim.calibrate;

import dev.ringmaster.sim.calibrate.Measurements.CollectiveSample;
import dev.ringmaster.sim.calibrate.Measurements.KernelSample;
import dev.ringmaster.sim.calibrate.Measurements.StepSample;
import dev.ringmaster.sim.hw.AllreduceAlgorithm;
import dev.ringmaster.sim.hw.AlphaBeta;
import dev.ringmaster.sim.hw.CollectiveModel;
import dev.ringmaster.sim.hw.GpuSpec;
import dev.ringmaster.sim.hw.HardwareProfile;
import dev.ringmaster.sim.model.Category;
import dev.ringmaster.sim.model.OpCost;
import dev.ringmaster.sim.serve.ForwardTimer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * Measurements generated from a known profile with the simulator's own formulas, optionally with
 * multiplicative noise: what calibration must recover. Also documents by example what {@code bench
 * collectives} and {@code bench one-batch} are expected to produce.
 */
public final class SyntheticMeasurements {
  private SyntheticMeasurements() {}

  /**
   * Samples from {@code truth}.
   *
   * @param noise relative standard deviation of Gaussian noise on every time (0 = exact)
   * @param seed random seed
   */
  public static Measurements generate(HardwareProfile truth, double noise, long seed) {
    Random rnd = new Random(seed);
    CollectiveModel cm = new CollectiveModel(truth);
    List<CollectiveSample> coll = new ArrayList<>();
    for (int n = 2; n <= truth.gpuCount(); n *= 2) {
      for (double bytes = 256; bytes <= 64e6; bytes *= 4) {
        for (Map.Entry<String, AlphaBeta> e : truth.collectives().nccl().entrySet()) {
          String key = e.getKey();
          double t =
              e.getValue()
                  .timeUs(CollectiveModel.allreduceSteps(key, n), bytes * 2.0 * (n - 1) / n);
          String algo = key.substring(0, key.indexOf('/'));
          String proto = key.substring(key.indexOf('/') + 1);
          coll.add(new CollectiveSample("allreduce", algo, proto, n, bytes, jitter(t, noise, rnd)));
        }
        coll.add(
            new CollectiveSample(
                "alltoall",
                "nccl",
                null,
                n,
                bytes,
                jitter(cm.allToAll(bytes, n).timeUs(), noise, rnd)));
        for (AllreduceAlgorithm a :
            List.of(AllreduceAlgorithm.ONESHOT, AllreduceAlgorithm.TWOSHOT)) {
          coll.add(
              new CollectiveSample(
                  "allreduce",
                  a.cliName(),
                  null,
                  n,
                  bytes,
                  jitter(cm.allreduce(a, bytes, n).timeUs(), noise, rnd)));
        }
      }
    }
    GpuSpec g = truth.gpu();
    List<KernelSample> kernels = new ArrayList<>();
    String[] kinds = {"gemm", "moe", "attention"};
    for (String kind : kinds) {
      for (double bytes = 1e6; bytes <= 2e9; bytes *= 3) {
        // decode-sized: few tokens, memory-bound
        OpCost op = op(kind, 2.0 * bytes, bytes);
        kernels.add(sample(g, kind, op, noise, rnd));
      }
    }
    for (double flops = 1e11; flops <= 1e14; flops *= 3) {
      // prefill-sized GEMMs: many tokens against the same weights, compute-bound
      OpCost op = op("gemm", flops, flops / 2000);
      kernels.add(sample(g, "gemm", op, noise, rnd));
    }
    List<StepSample> steps = new ArrayList<>();
    for (int k = 300; k <= 4000; k += 400) {
      double busy = 2000 + 3.0 * k;
      double graphed = busy + g.graphLaunchUs() + k * g.graphNodeUs() + g.stepOverheadUs();
      double eager = busy + k * g.kernelLaunchUs() + g.stepOverheadUs();
      steps.add(new StepSample(1, 1024, true, k, busy, jitter(graphed, noise, rnd), 0));
      steps.add(new StepSample(1, 1024, false, k, busy, jitter(eager, noise, rnd), 0));
    }
    return new Measurements(
        "synthetic:" + truth.name(), g.name(), truth.gpuCount(), coll, kernels, steps);
  }

  private static OpCost op(String kind, double flops, double bytes) {
    OpCost.Kind k = kind.equals("attention") ? OpCost.Kind.ATTENTION : OpCost.Kind.GEMM;
    Category c =
        kind.equals("moe")
            ? Category.MOE
            : kind.equals("attention") ? Category.ATTENTION : Category.WEIGHTS;
    return new OpCost(kind, c, k, flops, bytes, "bf16", 1);
  }

  private static KernelSample sample(GpuSpec g, String kind, OpCost op, double noise, Random rnd) {
    double t = ForwardTimer.opTimeUs(g, op);
    return new KernelSample(
        op.name(), kind, op.computeDtype(), op.flops(), op.bytes(), jitter(t, noise, rnd), 0);
  }

  private static double jitter(double t, double noise, Random rnd) {
    return noise == 0 ? t : t * (1 + noise * rnd.nextGaussian());
  }
}
