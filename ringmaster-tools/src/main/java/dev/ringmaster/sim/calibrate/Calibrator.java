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
 *       a kind fit that kind's bandwidth efficiency (beside a fixed time per kernel where the
 *       samples' bytes per kernel differ enough to tell them apart), compute-bound ones the compute
 *       efficiency; classification and fit repeat until stable.
 *   <li>Steps ({@link StepFit}): {@code wall - gpuBusy = fixed + kernels*perKernel +
 *       tokens*layers*perTokenLayer}; graphed steps give the graph-node cost and the step overhead
 *       (graph launch kept; the overhead measured instead where a one-rank run profiled its graph
 *       replay), others the per-kernel launch cost; batch sizes that differ give the per-token
 *       decode latency.
 * </ul>
 */
public final class Calibrator {
  /**
   * How far apart (max over min) the samples' bytes per kernel must lie before a fixed time per
   * kernel is fitted beside the bandwidth: TP 1 and TP 2 of one model differ by 2.
   */
  private static final double SPREAD_FOR_FIXED_TIME = 1.8;

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
    Map<String, Double> latencies = new LinkedHashMap<>();
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
      latencies.clear();
      for (Map.Entry<String, List<KernelSample>> e : memoryBound.entrySet()) {
        double eff = memoryEfficiency(e.getValue(), g.memoryBandwidth(), e.getKey(), latencies);
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
    if (!latencies.isEmpty()) {
      StringBuilder sb =
          new StringBuilder("kernels: fixed time per eager kernel apart from bytes:");
      latencies.forEach((k, v) -> sb.append(String.format(" %s %.2f us", k, v)));
      lines.add(sb.append(" (not kept: the step fit charges graph nodes)").toString());
    }
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

  /**
   * One kind's bandwidth efficiency from its memory-bound samples. Where every sample knows how
   * many kernels it covers and their bytes per unit of time differ enough (runs at several
   * tensor-parallel sizes: a quarter of the bytes per kernel at TP 4, but not a quarter of the
   * time), the time is {@code launches * fixed + bytes / (eff * bandwidth)}, fitted on relative
   * error with both terms non-negative; the fixed part is reported in {@code latencies}. Otherwise
   * (one configuration, bytes nearly constant) a line through the origin, as before: the fixed part
   * cannot be told apart there.
   */
  private static double memoryEfficiency(
      List<KernelSample> ks, double bandwidth, String kind, Map<String, Double> latencies) {
    int n = ks.size();
    double[] x = new double[n];
    double[] y = new double[n];
    double lo = Double.MAX_VALUE;
    double hi = 0;
    boolean counted = true;
    for (int i = 0; i < n; i++) {
      KernelSample k = ks.get(i);
      x[i] = k.bytes() / bandwidth * 1e6;
      y[i] = k.timeUs();
      counted &= k.launches() > 0;
      if (k.launches() > 0) {
        double perKernel = x[i] / k.launches();
        lo = Math.min(lo, perKernel);
        hi = Math.max(hi, perKernel);
      }
    }
    if (counted && n >= 3 && hi >= SPREAD_FOR_FIXED_TIME * lo) {
      double[][] rows = new double[n][];
      double[] rel = new double[n];
      for (int i = 0; i < n; i++) {
        double w = 1 / y[i];
        rows[i] = new double[] {ks.get(i).launches() * w, x[i] * w};
        rel[i] = 1;
      }
      double[] b = LeastSquares.nonNegative(rows, rel);
      if (b[1] > 0) {
        latencies.put(kind, b[0]);
        return 1 / b[1];
      }
    }
    return 1.0 / LeastSquares.slopeThroughOrigin(x, y);
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
