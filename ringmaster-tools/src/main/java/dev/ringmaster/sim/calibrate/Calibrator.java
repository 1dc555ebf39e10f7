package dev.ringmaster.sim.calibrate;

import dev.ringmaster.sim.calibrate.Measurements.CollectiveSample;
import dev.ringmaster.sim.calibrate.Measurements.KernelSample;
import dev.ringmaster.sim.hw.AlphaBeta;
import dev.ringmaster.sim.hw.CollectiveSpec;
import dev.ringmaster.sim.hw.GpuSpec;
import dev.ringmaster.sim.hw.HardwareProfile;
import dev.ringmaster.sim.hw.Interconnect;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

/**
 * Fits a profile's constants to measurements by least squares, each constant from the samples that
 * identify it:
 *
 * <ul>
 *   <li>In-process CPU ranks (a base profile with host collectives): {@link HostFit}.
 *   <li>NCCL allreduce per algorithm/protocol ({@link NcclFit}): {@code t = base + hop*steps +
 *       busBytes/bw}, linear in (1, steps, busBytes), on relative error with every constant
 *       non-negative; with one rank count base and hop cannot be told apart and hop keeps the base
 *       profile's value. Samples of NCCL choosing its own protocol are fitted as the lower envelope
 *       of the pairs.
 *   <li>NCCL all-to-all: the same form with {@code n-1} steps and bus factor {@code (n-1)/n}.
 *   <li>One-shot, two-shot and fused peer kernels, each on its own ({@link PeerFit}): {@code t =
 *       latency + transfer/eff}, within the peer buffer.
 *   <li>Kernels: each is memory- or compute-bound under the current constants; memory-bound ones of
 *       a kind fit that kind's bandwidth efficiency through the origin, compute-bound ones the
 *       compute efficiency; classification and fit repeat until stable.
 *   <li>Steps ({@link StepFit}): {@code wall - gpuBusy = fixed + kernels*perKernel +
 *       tokens*layers*perTokenLayer}; graphed steps give the graph-node cost and the step overhead
 *       (graph launch kept), others the per-kernel launch cost; batch sizes that differ give the
 *       per-token decode latency.
 * </ul>
 */
public final class Calibrator {
  private Calibrator() {}

  /**
   * Result of a calibration.
   *
   * @param profile the fitted profile
   * @param fitted one line per fitted constant: name, value, samples, RMS relative residual
   */
  public record Result(HardwareProfile profile, List<String> fitted) {}

  /** Fits {@code base}'s constants to {@code m}; the result is named {@code newName}. */
  public static Result calibrate(HardwareProfile base, Measurements m, String newName) {
    List<String> lines = new ArrayList<>();
    CollectiveSpec coll;
    Interconnect ic = base.interconnect();
    if (base.collectives().host() != null) {
      // in-process CPU ranks: no NCCL, no peer links; every algorithm has its own line
      coll =
          base.collectives()
              .withHost(HostFit.fit(base.collectives().host(), m.collectives(), lines));
    } else {
      coll = fitCollectives(base, m.collectives(), lines);
      coll = coll.withPeer(PeerFit.fit(base, m.collectives(), lines));
    }
    GpuSpec gpu = fitKernels(base.gpu(), m.kernels(), lines);
    gpu = StepFit.fit(gpu, m.steps(), lines);
    List<String> sources = new ArrayList<>(base.sources());
    sources.add(
        "calibrated by ringmaster simulate calibrate from measurements on "
            + (m.host() == null ? "this host" : m.host())
            + " ("
            + m.collectives().size()
            + " collective, "
            + m.kernels().size()
            + " kernel, "
            + m.steps().size()
            + " step samples): "
            + String.join("; ", lines));
    HardwareProfile p =
        new HardwareProfile(
            newName,
            base.description(),
            sources,
            base.assumptions(),
            base.gpuCount(),
            gpu,
            ic,
            coll);
    return new Result(p, List.copyOf(lines));
  }

  private static CollectiveSpec fitCollectives(
      HardwareProfile base, List<CollectiveSample> samples, List<String> lines) {
    NcclFit.Result nccl = NcclFit.fit(base.collectives().nccl(), samples);
    lines.addAll(nccl.lines());
    AlphaBeta a2a = base.collectives().allToAll();
    List<CollectiveSample> s = select(samples, c -> c.op().equals("alltoall"));
    if (s.size() >= 2) {
      AlphaBeta fit =
          NcclFit.fitAlphaBeta(
              s, a2a, c -> c.ranks() - 1, c -> c.bytes() * (c.ranks() - 1) / c.ranks());
      a2a = fit;
      lines.add(
          NcclFit.describe(
              "all-to-all",
              fit,
              s,
              c -> fit.timeUs(c.ranks() - 1, c.bytes() * (c.ranks() - 1) / c.ranks())));
    }
    return base.collectives().withModels(nccl.nccl(), a2a);
  }

  private static GpuSpec fitKernels(GpuSpec g, List<KernelSample> samples, List<String> lines) {
    if (samples.isEmpty()) {
      return g;
    }
    double gemm = g.gemmMemoryEfficiency();
    double moe = g.moeMemoryEfficiency();
    double attn = g.attentionMemoryEfficiency();
    double comp = g.computeEfficiency();
    for (int iter = 0; iter < 5; iter++) {
      GpuSpec cur = g.withConstants(gemm, moe, attn, comp, 0, 0, 0, 0);
      List<KernelSample> computeBound = new ArrayList<>();
      Map<String, List<KernelSample>> memoryBound = new LinkedHashMap<>();
      for (KernelSample k : samples) {
        double mem = k.bytes() / (cur.memoryBandwidth() * effOf(cur, k.kind()));
        double cmp = k.flops() / (cur.flopsFor(k.dtype()) * comp);
        if (cmp > mem) {
          computeBound.add(k);
        } else {
          memoryBound.computeIfAbsent(k.kind(), x -> new ArrayList<>()).add(k);
        }
      }
      for (Map.Entry<String, List<KernelSample>> e : memoryBound.entrySet()) {
        List<KernelSample> ks = e.getValue();
        double[] x = new double[ks.size()];
        double[] y = new double[ks.size()];
        for (int i = 0; i < ks.size(); i++) {
          x[i] = ks.get(i).bytes() / g.memoryBandwidth() * 1e6;
          y[i] = ks.get(i).timeUs();
        }
        double eff = 1.0 / LeastSquares.slopeThroughOrigin(x, y);
        switch (e.getKey()) {
          case "moe" -> moe = eff;
          case "attention" -> attn = eff;
          default -> gemm = eff;
        }
      }
      if (!computeBound.isEmpty()) {
        double[] x = new double[computeBound.size()];
        double[] y = new double[computeBound.size()];
        for (int i = 0; i < computeBound.size(); i++) {
          KernelSample k = computeBound.get(i);
          x[i] = k.flops() / g.flopsFor(k.dtype()) * 1e6;
          y[i] = k.timeUs();
        }
        comp = 1.0 / LeastSquares.slopeThroughOrigin(x, y);
      }
    }
    lines.add(
        String.format(
            "kernels: gemm memory eff %.3f, moe memory eff %.3f, attention memory eff %.3f, compute"
                + " eff %.3f (%d samples)",
            gemm, moe, attn, comp, samples.size()));
    return g.withConstants(
        gemm,
        moe,
        attn,
        comp,
        g.kernelLaunchUs(),
        g.graphNodeUs(),
        g.graphLaunchUs(),
        g.stepOverheadUs());
  }

  private static double effOf(GpuSpec g, String kind) {
    return switch (kind) {
      case "moe" -> g.moeMemoryEfficiency();
      case "attention" -> g.attentionMemoryEfficiency();
      default -> g.gemmMemoryEfficiency();
    };
  }

  private static <T> List<T> select(List<T> all, Predicate<T> p) {
    return all.stream().filter(p).toList();
  }
}
