package dev.ringmaster.sim.calibrate;

import dev.ringmaster.sim.calibrate.Measurements.CollectiveSample;
import dev.ringmaster.sim.calibrate.Measurements.KernelSample;
import dev.ringmaster.sim.hw.AlphaBeta;
import dev.ringmaster.sim.hw.CollectiveModel;
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
 *   <li>NCCL allreduce per algorithm/protocol: {@code t = base + hop*steps + busBytes/bw}, linear
 *       in (1, steps, busBytes); with one rank count base and hop cannot be told apart and hop
 *       keeps the base profile's value.
 *   <li>NCCL all-to-all: the same form with {@code n-1} steps and bus factor {@code (n-1)/n}.
 *   <li>One-shot/two-shot: {@code t = launch + m*sync + transfer/eff} (m = 1 or 2 barriers), linear
 *       in (m, transfer) for the barrier time and the peer-read efficiency.
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
      ic = fitPeer(base, m.collectives(), lines);
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
    List<CollectiveSample> auto =
        select(
            samples,
            c ->
                c.op().equals("allreduce")
                    && c.algorithm().equals("nccl")
                    && BenchCollectives.AUTO.equalsIgnoreCase(c.protocol()));
    // NCCL-chosen samples go to the pair the current fit predicts fastest; refit until the
    // assignment is stable (a sample near a crossover may move once the constants do).
    Map<String, AlphaBeta> nccl = base.collectives().nccl();
    List<String> ncclLines = new ArrayList<>();
    String[] assigned = null;
    for (int iter = 0; iter < 10; iter++) {
      String[] next = new String[auto.size()];
      for (int i = 0; i < next.length; i++) {
        next[i] = fastest(nccl, auto.get(i));
      }
      if (java.util.Arrays.equals(next, assigned)) {
        break;
      }
      assigned = next;
      ncclLines = new ArrayList<>();
      nccl = fitNccl(base, samples, auto, assigned, ncclLines);
    }
    lines.addAll(ncclLines);
    AlphaBeta a2a = base.collectives().allToAll();
    List<CollectiveSample> s = select(samples, c -> c.op().equals("alltoall"));
    if (s.size() >= 2) {
      AlphaBeta fit =
          fitAlphaBeta(s, a2a, c -> c.ranks() - 1, c -> c.bytes() * (c.ranks() - 1) / c.ranks());
      a2a = fit;
      lines.add(
          describe(
              "all-to-all",
              fit,
              s,
              c -> fit.timeUs(c.ranks() - 1, c.bytes() * (c.ranks() - 1) / c.ranks())));
    }
    return base.collectives().withModels(nccl, a2a);
  }

  private static Map<String, AlphaBeta> fitNccl(
      HardwareProfile base,
      List<CollectiveSample> samples,
      List<CollectiveSample> auto,
      String[] assigned,
      List<String> lines) {
    Map<String, AlphaBeta> nccl = new LinkedHashMap<>(base.collectives().nccl());
    for (Map.Entry<String, AlphaBeta> e : base.collectives().nccl().entrySet()) {
      String key = e.getKey();
      String algo = key.substring(0, key.indexOf('/'));
      String proto = key.substring(key.indexOf('/') + 1);
      List<CollectiveSample> s =
          new ArrayList<>(
              select(
                  samples,
                  c ->
                      c.op().equals("allreduce")
                          && (c.algorithm().equals(algo)
                              || (c.algorithm().equals("nccl") && algo.equals("ring")))
                          && proto.equalsIgnoreCase(c.protocol())));
      for (int i = 0; i < auto.size(); i++) {
        if (key.equals(assigned[i])) {
          s.add(auto.get(i));
        }
      }
      boolean severalRanks = s.stream().mapToInt(CollectiveSample::ranks).distinct().count() > 1;
      if (s.size() < (severalRanks ? 3 : 2)) {
        continue;
      }
      AlphaBeta fit;
      try {
        fit =
            fitAlphaBeta(
                s,
                e.getValue(),
                c -> CollectiveModel.allreduceSteps(key, c.ranks()),
                c -> c.bytes() * 2.0 * (c.ranks() - 1) / c.ranks());
      } catch (IllegalArgumentException collinear) {
        // e.g. every sample the same size: the pair keeps the base profile's constants
        continue;
      }
      nccl.put(key, fit);
      lines.add(
          describe(
              "nccl " + key,
              fit,
              s,
              c ->
                  fit.timeUs(
                      CollectiveModel.allreduceSteps(key, c.ranks()),
                      c.bytes() * 2.0 * (c.ranks() - 1) / c.ranks())));
    }
    return nccl;
  }

  /** The NCCL algorithm/protocol that {@code nccl} predicts fastest for an allreduce sample. */
  private static String fastest(Map<String, AlphaBeta> nccl, CollectiveSample c) {
    String best = null;
    double bestT = Double.POSITIVE_INFINITY;
    for (Map.Entry<String, AlphaBeta> e : nccl.entrySet()) {
      double t =
          e.getValue()
              .timeUs(
                  CollectiveModel.allreduceSteps(e.getKey(), c.ranks()),
                  c.bytes() * 2.0 * (c.ranks() - 1) / c.ranks());
      if (t < bestT) {
        bestT = t;
        best = e.getKey();
      }
    }
    return best;
  }

  private static AlphaBeta fitAlphaBeta(
      List<CollectiveSample> s,
      AlphaBeta prior,
      java.util.function.ToIntFunction<CollectiveSample> steps,
      java.util.function.ToDoubleFunction<CollectiveSample> busBytes) {
    boolean severalRanks = s.stream().mapToInt(CollectiveSample::ranks).distinct().count() > 1;
    double[][] x = new double[s.size()][];
    double[] y = new double[s.size()];
    for (int i = 0; i < s.size(); i++) {
      CollectiveSample c = s.get(i);
      double bb = busBytes.applyAsDouble(c) / 1e6; // MB, to keep the system well scaled
      x[i] = severalRanks ? new double[] {1, steps.applyAsInt(c), bb} : new double[] {1, bb};
      y[i] = severalRanks ? c.timeUs() : c.timeUs() - prior.hopUs() * steps.applyAsInt(c);
    }
    double[] b = LeastSquares.solve(x, y);
    double perMb = b[b.length - 1];
    double bw = 1e12 / perMb; // 1e6 bytes per perMb microseconds
    return severalRanks ? new AlphaBeta(b[0], b[1], bw) : new AlphaBeta(b[0], prior.hopUs(), bw);
  }

  private static Interconnect fitPeer(
      HardwareProfile base, List<CollectiveSample> samples, List<String> lines) {
    Interconnect ic = base.interconnect();
    List<CollectiveSample> s =
        select(
            samples,
            c ->
                c.op().equals("allreduce")
                    && (c.algorithm().equals("oneshot") || c.algorithm().equals("twoshot")));
    if (s.size() < 2) {
      return ic;
    }
    double launch = base.collectives().peerKernelLaunchUs();
    double[][] x = new double[s.size()][];
    double[] y = new double[s.size()];
    for (int i = 0; i < s.size(); i++) {
      CollectiveSample c = s.get(i);
      boolean two = c.algorithm().equals("twoshot");
      x[i] =
          new double[] {
            two ? 2 : 1, CollectiveModel.peerTransferSeconds(ic, c.bytes(), c.ranks(), two) * 1e6
          };
      y[i] = c.timeUs() - launch;
    }
    double[] b = LeastSquares.solve(x, y);
    Interconnect fitted =
        new Interconnect(
            ic.type(),
            ic.pcieGen(),
            ic.pcieLanes(),
            ic.linkBandwidth(),
            ic.gpuSocket(),
            ic.gpuSwitch(),
            ic.crossSocketBandwidth(),
            1.0 / b[1],
            b[0]);
    lines.add(
        String.format(
            "peer allreduce: sync %.2f us, read efficiency %.3f (%d samples)",
            b[0], 1.0 / b[1], s.size()));
    return fitted;
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

  private static String describe(
      String what,
      AlphaBeta fit,
      List<CollectiveSample> s,
      java.util.function.ToDoubleFunction<CollectiveSample> predict) {
    double sq = 0;
    for (CollectiveSample c : s) {
      double r = (predict.applyAsDouble(c) - c.timeUs()) / c.timeUs();
      sq += r * r;
    }
    return String.format(
        "%s: base %.2f us, hop %.3f us, bus %.2f GB/s (%d samples, rms error %.1f%%)",
        what,
        fit.baseUs(),
        fit.hopUs(),
        fit.busBandwidth() / 1e9,
        s.size(),
        100 * Math.sqrt(sq / s.size()));
  }

  private static <T> List<T> select(List<T> all, Predicate<T> p) {
    return all.stream().filter(p).toList();
  }
}
