package dev.ringmaster.cuda.collective;

import dev.ringmaster.parallel.AllReduceAlgorithm;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * How {@code --allreduce auto} turns this host's facts and measurements into a {@link
 * DeviceAllReduceTable}. Peer-read kernels (one-shot, two-shot) are candidates only with peer
 * access between every pair, with custom allreduce enabled, and for messages that fit the staging
 * buffers. On more than two GPUs linked only by PCIe, every GPU reading every other at once makes
 * the links contend (the reason vLLM refuses that case); there a peer-read kernel is chosen only
 * where it measured clearly faster than NCCL, and never without a measurement.
 */
public final class AllReduceRule {
  /** On PCIe-only boxes of more than two GPUs, a peer-read kernel must beat NCCL by this factor. */
  public static final double PCIE_MARGIN = 0.9;

  private AllReduceRule() {}

  /**
   * What the rule knows about the world.
   *
   * @param worldSize GPUs in the group
   * @param pcieOnly no NVLink between any pair
   * @param peerAccess every pair can access each other's memory
   * @param customDisabled {@code --disable-custom-all-reduce}
   * @param customMaxBytes largest message the peer kernels take
   */
  public record Facts(
      int worldSize,
      boolean pcieOnly,
      boolean peerAccess,
      boolean customDisabled,
      long customMaxBytes) {

    /** Whether peer-read kernels may run at all. */
    public boolean customPossible() {
      return worldSize > 1 && peerAccess && !customDisabled;
    }

    /** Whether the PCIe contention rule applies. */
    public boolean contended() {
      return pcieOnly && worldSize > 2;
    }
  }

  /**
   * One measured point.
   *
   * @param bytes message size
   * @param algorithm NCCL, ONESHOT or TWOSHOT
   * @param micros median time
   */
  public record Measurement(long bytes, AllReduceAlgorithm algorithm, double micros) {}

  /**
   * A table with the reasons for it.
   *
   * @param table the table
   * @param log one line per size (or a single line for unmeasured defaults) saying why
   */
  public record Decision(DeviceAllReduceTable table, List<String> log) {}

  /**
   * The table without measurements: NCCL where peer kernels cannot run or links would contend, else
   * one-shot up to 64 KiB and two-shot up to 1 MiB (capped by the staging size).
   */
  public static Decision defaults(Facts f) {
    if (!f.customPossible()) {
      return new Decision(DeviceAllReduceTable.ncclOnly(), List.of("NCCL: " + whyNoCustom(f)));
    }
    if (f.contended()) {
      return new Decision(
          DeviceAllReduceTable.ncclOnly(),
          List.of(
              "NCCL: "
                  + f.worldSize()
                  + " PCIe-only GPUs and no measurement (peer reads from every GPU contend)"));
    }
    List<DeviceAllReduceTable.Step> steps = new ArrayList<>();
    long one = Math.min(64 << 10, f.customMaxBytes());
    long two = Math.min(1 << 20, f.customMaxBytes());
    steps.add(new DeviceAllReduceTable.Step(one, AllReduceAlgorithm.ONESHOT));
    if (two > one) {
      steps.add(new DeviceAllReduceTable.Step(two, AllReduceAlgorithm.TWOSHOT));
    }
    DeviceAllReduceTable t = new DeviceAllReduceTable(steps);
    return new Decision(t, List.of("unmeasured defaults: " + t));
  }

  private static String whyNoCustom(Facts f) {
    if (f.worldSize() <= 1) {
      return "one GPU";
    }
    if (f.customDisabled()) {
      return "--disable-custom-all-reduce";
    }
    return "no peer access between every pair of GPUs";
  }

  /**
   * The table from measurements: at each measured size the fastest allowed algorithm (see the class
   * comment); consecutive sizes with the same winner form one step.
   */
  public static Decision choose(Facts f, List<Measurement> measurements) {
    Map<Long, Map<AllReduceAlgorithm, Double>> bySize = new TreeMap<>();
    for (Measurement m : measurements) {
      bySize
          .computeIfAbsent(m.bytes(), k -> new TreeMap<>())
          .merge(m.algorithm(), m.micros(), Math::min);
    }
    List<String> log = new ArrayList<>();
    List<DeviceAllReduceTable.Step> steps = new ArrayList<>();
    AllReduceAlgorithm current = null;
    long currentMax = -1;
    for (var e : bySize.entrySet()) {
      long bytes = e.getKey();
      Map<AllReduceAlgorithm, Double> times = e.getValue();
      Double nccl = times.get(AllReduceAlgorithm.NCCL);
      AllReduceAlgorithm best = AllReduceAlgorithm.NCCL;
      double bestTime = nccl == null ? Double.POSITIVE_INFINITY : nccl;
      String note = "";
      for (AllReduceAlgorithm a : List.of(AllReduceAlgorithm.ONESHOT, AllReduceAlgorithm.TWOSHOT)) {
        Double t = times.get(a);
        if (t == null || !f.customPossible() || bytes > f.customMaxBytes()) {
          continue;
        }
        if (f.contended() && (nccl == null || t > PCIE_MARGIN * nccl)) {
          note =
              " ("
                  + a
                  + " not taken: PCIe-only x"
                  + f.worldSize()
                  + " needs it 10% faster than NCCL)";
          continue;
        }
        if (t < bestTime) {
          best = a;
          bestTime = t;
        }
      }
      log.add(String.format(Locale.ROOT, "%10d B -> %-8s %s%s", bytes, best, format(times), note));
      if (best != current && current != null) {
        steps.add(new DeviceAllReduceTable.Step(currentMax, current));
      }
      current = best;
      currentMax = bytes;
    }
    if (current != null && current != AllReduceAlgorithm.NCCL) {
      steps.add(new DeviceAllReduceTable.Step(Math.min(currentMax, f.customMaxBytes()), current));
    }
    // A trailing NCCL step is implied by the table; drop an explicit one only at the end.
    while (!steps.isEmpty() && steps.getLast().algorithm() == AllReduceAlgorithm.NCCL) {
      steps.removeLast();
    }
    return new Decision(new DeviceAllReduceTable(steps), log);
  }

  private static String format(Map<AllReduceAlgorithm, Double> times) {
    StringBuilder sb = new StringBuilder();
    times.forEach((a, t) -> sb.append(String.format(Locale.ROOT, "%s %.1f us  ", a, t)));
    return sb.toString().trim();
  }
}
