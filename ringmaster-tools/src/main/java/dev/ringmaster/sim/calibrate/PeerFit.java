package dev.ringmaster.sim.calibrate;

import dev.ringmaster.sim.calibrate.Measurements.CollectiveSample;
import dev.ringmaster.sim.hw.AllreduceAlgorithm;
import dev.ringmaster.sim.hw.CollectiveModel;
import dev.ringmaster.sim.hw.CollectiveSpec;
import dev.ringmaster.sim.hw.HardwareProfile;
import dev.ringmaster.sim.hw.Interconnect;
import dev.ringmaster.sim.hw.PeerKernel;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Fits each peer-memory kernel (one-shot, two-shot, fused) on its own: {@code t = latency +
 * transfer / efficiency}, where transfer is {@link CollectiveModel#peerTransferSeconds} (the data
 * movement at full link rate), on relative error with the latency non-negative and the efficiency
 * at most 1. Only samples within the peer buffer ({@link CollectiveSpec#peerMaxBytes}) take part:
 * larger messages run on NCCL, and the NCCL fit predicts them.
 */
final class PeerFit {
  private static final List<AllreduceAlgorithm> KERNELS =
      List.of(AllreduceAlgorithm.ONESHOT, AllreduceAlgorithm.TWOSHOT, AllreduceAlgorithm.FUSED);

  private PeerFit() {}

  /** {@code base}'s peer kernels with the ones {@code samples} show fitted; lines describe them. */
  static Map<String, PeerKernel> fit(
      HardwareProfile base, List<CollectiveSample> samples, List<String> lines) {
    CollectiveSpec spec = base.collectives();
    Interconnect ic = base.interconnect();
    Map<String, PeerKernel> out = spec.peer() == null ? null : new LinkedHashMap<>(spec.peer());
    for (AllreduceAlgorithm algo : KERNELS) {
      String key = CollectiveModel.peerKey(algo);
      boolean two = algo == AllreduceAlgorithm.TWOSHOT;
      List<CollectiveSample> all =
          samples.stream()
              .filter(c -> c.op().equals("allreduce") && c.algorithm().equals(key))
              .toList();
      List<CollectiveSample> s = all.stream().filter(c -> spec.peerFits(c.bytes())).toList();
      if (s.stream().mapToDouble(CollectiveSample::bytes).distinct().count() < 2) {
        continue;
      }
      // t/t = latency/t + transfer*(1 + extra)/t with extra = 1/efficiency - 1 >= 0
      double[][] x = new double[s.size()][];
      double[] y = new double[s.size()];
      for (int i = 0; i < s.size(); i++) {
        CollectiveSample c = s.get(i);
        double transferUs =
            CollectiveModel.peerTransferSeconds(ic, c.bytes(), c.ranks(), two) * 1e6;
        x[i] = new double[] {1 / c.timeUs(), transferUs / c.timeUs()};
        y[i] = 1 - transferUs / c.timeUs();
      }
      double[] b = LeastSquares.nonNegativeMinimax(x, y, NcclFit.MINIMAX_ITERATIONS);
      PeerKernel k = new PeerKernel(b[0], 1 / (1 + b[1]));
      if (out == null) {
        out = new LinkedHashMap<>();
      }
      out.put(key, k);
      double sq = 0;
      double max = 0;
      for (CollectiveSample c : s) {
        double pred = k.timeUs(CollectiveModel.peerTransferSeconds(ic, c.bytes(), c.ranks(), two));
        double r = pred / c.timeUs() - 1;
        sq += r * r;
        max = Math.max(max, Math.abs(r));
      }
      int above = all.size() - s.size();
      lines.add(
          String.format(
              Locale.ROOT,
              "peer %s: latency %.2f us, read efficiency %.3f (%.1f GB/s of the %.0f GB/s link) (%d"
                  + " samples, %d..%d B, rms error %.1f%%, max %.1f%%)%s",
              key,
              k.latencyUs(),
              k.readEfficiency(),
              k.readEfficiency() * ic.linkBandwidth() / 1e9,
              ic.linkBandwidth() / 1e9,
              s.size(),
              (long) s.stream().mapToDouble(CollectiveSample::bytes).min().orElse(0),
              (long) s.stream().mapToDouble(CollectiveSample::bytes).max().orElse(0),
              100 * Math.sqrt(sq / s.size()),
              100 * max,
              above == 0
                  ? ""
                  : "; "
                      + above
                      + " above the "
                      + spec.peerMaxBytes()
                      + " B peer buffer run on NCCL"));
    }
    return out;
  }
}
