package dev.ringmaster.sim.hw;

import java.util.Map;

/**
 * Times of collectives on a profile's box for {@code n} ranks (GPUs 0..n-1).
 *
 * <p>NCCL: alpha-beta per algorithm/protocol, the fastest available one wins (as NCCL's tuner picks
 * by its own model). Peer-memory kernels: a barrier through flags, then every rank loads from its
 * peers at once; the time is set by the busiest shared resource, either a GPU's own link ({@code
 * (n-1)} peers' data arriving) or, on PCIe boxes with two sockets, the socket interconnect that all
 * cross-socket flows share. That contention is what makes one-shot slow on PCIe at larger sizes.
 * Each peer kernel has its own fixed latency and read efficiency ({@link #peerKernel}); messages
 * larger than the peer kernels' staging buffer ({@link CollectiveSpec#peerMaxBytes}) go to NCCL, as
 * the engine sends them.
 */
public final class CollectiveModel {
  private final HardwareProfile profile;

  /** Model for a profile. */
  public CollectiveModel(HardwareProfile profile) {
    this.profile = profile;
  }

  /** Allreduce of {@code bytes} per rank over {@code n} ranks. */
  public CollectiveTime allreduce(AllreduceAlgorithm algo, double bytes, int n) {
    if (n <= 1) {
      return new CollectiveTime(0, "none");
    }
    HostCollectives host = profile.collectives().host();
    if (host != null) {
      return hostAllreduce(host, algo, bytes, n);
    }
    return switch (algo) {
      case NCCL -> bestNccl(bytes * 2.0 * (n - 1) / n, 2 * (n - 1), treeSteps(n), null);
      case RING -> bestNccl(bytes * 2.0 * (n - 1) / n, 2 * (n - 1), treeSteps(n), "ring");
      case ONESHOT, TWOSHOT, FUSED -> peer(algo, bytes, n);
    };
  }

  /**
   * The constants of a peer-memory kernel (ONESHOT, TWOSHOT or FUSED): the profile's calibrated
   * ones where present, else the uncalibrated model (kernel launch plus one barrier, two for
   * two-shot, at the interconnect's peer read efficiency); FUSED without its own constants runs as
   * one-shot.
   */
  public PeerKernel peerKernel(AllreduceAlgorithm algo) {
    Map<String, PeerKernel> calibrated = profile.collectives().peer();
    String key = peerKey(algo);
    if (calibrated != null && calibrated.containsKey(key)) {
      return calibrated.get(key);
    }
    if (algo == AllreduceAlgorithm.FUSED) {
      return peerKernel(AllreduceAlgorithm.ONESHOT);
    }
    Interconnect ic = profile.interconnect();
    int barriers = algo == AllreduceAlgorithm.TWOSHOT ? 2 : 1;
    return new PeerKernel(
        profile.collectives().peerKernelLaunchUs() + barriers * ic.peerSyncUs(),
        ic.peerReadEfficiency());
  }

  /** Key of a peer-memory kernel in {@link CollectiveSpec#peer}. */
  public static String peerKey(AllreduceAlgorithm algo) {
    return switch (algo) {
      case ONESHOT -> "oneshot";
      case TWOSHOT -> "twoshot";
      case FUSED -> "fused";
      default -> throw new IllegalArgumentException("not a peer-memory kernel: " + algo);
    };
  }

  /**
   * Microseconds of the add + RMSNorm kernel that follows an unfused allreduce of {@code bytes}: it
   * reads the sum and the residual and writes the residual and the output, four times the message
   * through device memory at the weight-streaming efficiency.
   */
  public double addRmsNormUs(double bytes) {
    GpuSpec g = profile.gpu();
    return 4 * bytes / (g.memoryBandwidth() * g.gemmMemoryEfficiency()) * 1e6;
  }

  /** All-gather producing {@code totalBytes} on every rank (NCCL ring/tree). */
  public CollectiveTime allGather(double totalBytes, int n) {
    if (n <= 1) {
      return new CollectiveTime(0, "none");
    }
    return bestNccl(totalBytes * (n - 1) / n, n - 1, treeSteps(n), "ring");
  }

  /** Reduce-scatter of {@code totalBytes} input per rank (NCCL ring). */
  public CollectiveTime reduceScatter(double totalBytes, int n) {
    return allGather(totalBytes, n);
  }

  /** All-to-all where each rank sends {@code bytesPerRank} in total, spread over all ranks. */
  public CollectiveTime allToAll(double bytesPerRank, int n) {
    if (n <= 1) {
      return new CollectiveTime(0, "none");
    }
    AlphaBeta ab = profile.collectives().allToAll();
    return new CollectiveTime(ab.timeUs(n - 1, bytesPerRank * (n - 1) / n), "nccl alltoall");
  }

  private CollectiveTime hostAllreduce(
      HostCollectives host, AllreduceAlgorithm algo, double bytes, int n) {
    String name =
        switch (algo) {
          case NCCL -> null; // no NCCL between threads: the fastest host algorithm stands in
          case RING -> "ring";
          case ONESHOT, FUSED -> "oneshot";
          case TWOSHOT -> "twoshot";
        };
    CollectiveTime t =
        name == null
            ? host.fastest(bytes, n)
            : new CollectiveTime(host.timeUs(name, bytes, n), "host " + name);
    if (t == null || Double.isNaN(t.timeUs())) {
      throw new IllegalStateException(
          "profile "
              + profile.name()
              + " has no in-process allreduce constants for "
              + (name == null ? "any algorithm" : name)
              + " at "
              + n
              + " ranks: calibrate it from bench collectives --device cpu --world-size "
              + n);
    }
    return t;
  }

  private CollectiveTime bestNccl(double busBytes, int ringSteps, int treeSteps, String only) {
    CollectiveTime best = null;
    for (Map.Entry<String, AlphaBeta> e : profile.collectives().nccl().entrySet()) {
      String key = e.getKey();
      if (only != null && !key.startsWith(only + "/")) {
        continue;
      }
      int steps = key.startsWith("tree/") ? treeSteps : ringSteps;
      double t = e.getValue().timeUs(steps, busBytes);
      if (best == null || t < best.timeUs()) {
        best = new CollectiveTime(t, "nccl " + key);
      }
    }
    if (best == null) {
      throw new IllegalStateException(
          "profile "
              + profile.name()
              + " has no NCCL model"
              + (only == null ? "" : " for " + only));
    }
    return best;
  }

  private CollectiveTime peer(AllreduceAlgorithm algo, double bytes, int n) {
    CollectiveSpec spec = profile.collectives();
    if (!spec.peerFits(bytes)) {
      // the engine sends what its staging buffer cannot hold to NCCL (and a fused one then runs
      // the add + RMSNorm kernel after it)
      CollectiveTime nccl = bestNccl(bytes * 2.0 * (n - 1) / n, 2 * (n - 1), treeSteps(n), null);
      String why = " (above the " + bytesText(spec.peerMaxBytes()) + " peer buffer)";
      return algo == AllreduceAlgorithm.FUSED
          ? new CollectiveTime(
              nccl.timeUs() + addRmsNormUs(bytes), nccl.how() + " + add/RMSNorm" + why)
          : new CollectiveTime(nccl.timeUs(), nccl.how() + why);
    }
    boolean two = algo == AllreduceAlgorithm.TWOSHOT;
    Interconnect ic = profile.interconnect();
    String name =
        switch (algo) {
          case TWOSHOT -> "two-shot";
          case FUSED -> "fused";
          default -> "one-shot";
        };
    if (usesFabric(algo)) {
      double us = new PeerFabricModel(ic).allreduceUs(bytes, n, two, spec.peerKernelLaunchUs());
      return new CollectiveTime(us, name + " (PCIe tree, all peers at once)");
    }
    double us = peerKernel(algo).timeUs(peerTransferSeconds(ic, bytes, n, two));
    return new CollectiveTime(
        us, crossBound(ic, bytes, n, two) ? name + " (socket link bound)" : name);
  }

  /**
   * Whether a peer kernel is timed over the PCIe tree: on a PCIe box whose profile describes the
   * tree, unless that kernel has calibrated constants (measured on the box, they win).
   */
  private boolean usesFabric(AllreduceAlgorithm algo) {
    Interconnect ic = profile.interconnect();
    Map<String, PeerKernel> calibrated = profile.collectives().peer();
    String key = peerKey(algo);
    boolean measured =
        calibrated != null
            && (calibrated.containsKey(key)
                || (algo == AllreduceAlgorithm.FUSED && calibrated.containsKey("oneshot")));
    return !ic.nvlink() && ic.pcieFabric() != null && !measured;
  }

  private static String bytesText(long bytes) {
    if (bytes % (1 << 20) == 0) {
      return bytes / (1 << 20) + " MiB";
    }
    return bytes % 1024 == 0 ? bytes / 1024 + " KiB" : bytes + " B";
  }

  /**
   * Seconds the data movement of a peer-memory allreduce takes at full link efficiency: the larger
   * of a GPU's own link time and the socket-link time. One-shot loads the whole message from each
   * of the n-1 peers; two-shot loads 1/n of it from each peer twice (reduce-scatter, all-gather).
   */
  public static double peerTransferSeconds(Interconnect ic, double bytes, int n, boolean twoShot) {
    double perPair = twoShot ? bytes / n : bytes;
    double ownLink = (n - 1) * perPair / ic.linkBandwidth();
    double cross = ic.crossSocketBytesAllToAll(n, perPair) / ic.crossSocketBandwidth();
    return (twoShot ? 2 : 1) * Math.max(ownLink, cross);
  }

  private static boolean crossBound(Interconnect ic, double bytes, int n, boolean twoShot) {
    double perPair = twoShot ? bytes / n : bytes;
    return ic.crossSocketBytesAllToAll(n, perPair) / ic.crossSocketBandwidth()
        > (n - 1) * perPair / ic.linkBandwidth();
  }

  /** Sequential hops of a ring (2(n-1) for allreduce) or tree (2 log2 n) allreduce. */
  public static int allreduceSteps(String ncclKey, int n) {
    return ncclKey.startsWith("tree/") ? treeSteps(n) : 2 * (n - 1);
  }

  private static int treeSteps(int n) {
    return 2 * (32 - Integer.numberOfLeadingZeros(n - 1));
  }
}
