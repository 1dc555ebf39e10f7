package dev.ringmaster.sim.hw;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The engine's peer-memory allreduce kernels on a PCIe tree ({@link PcieFabric}), from the kernels'
 * own structure ({@code custom_allreduce.cu}): every rank copies its input into its staging buffer,
 * meets every peer at a flag barrier, loads from all peers at once (one-shot: the whole message
 * from each; two-shot: 1/n of it, reduce-scatter then all-gather, with a barrier between), and
 * meets them again at the end. Two-shot's all-gather reads the owners' slices one after another (a
 * load, then its store, per owner; an SM issues in order), so it pays the sum of the round trips.
 *
 * <ul>
 *   <li>The staging buffers hold f32 (the engine reduces f32 activations), twice the bf16 bytes the
 *       simulator counts for an activation.
 *   <li>Loads are non-posted reads: a GPU keeps {@link PcieFabric#readWindowBytes} in flight over
 *       all its peers together, each flow holding its rate times its round trip of it (Little's
 *       law), and a flow runs at most at its path class's bandwidth.
 *   <li>All n(n-1) flows run at once, routed GPU port, switch uplink, socket link, switch downlink,
 *       GPU port, each link shared max-min fairly ({@link FlowNetwork}): two GPUs under one switch
 *       share its uplink, all cross-socket flows share the socket link.
 *   <li>A barrier is a system-scope fence and one posted flag write to each peer per block, then
 *       polling of the local flags: the slowest path's one-way write latency plus the flag writes
 *       serialised at the busiest link (blocks x peers small writes). Writes are posted (no
 *       completion comes back), so a barrier costs far less than a read round trip.
 * </ul>
 */
public final class PeerFabricModel {
  /** Threads per block and bytes per thread and pass of the engine's kernels. */
  private static final int THREADS = 512;

  private static final int BYTES_PER_THREAD = 16;

  /** {@code RM_AR_MAX_BLOCKS}. */
  private static final int MAX_BLOCKS = 128;

  /** Bytes per element in the engine's staging buffers (f32) over the bf16 the callers count. */
  static final double STAGING_OVER_BF16 = 2.0;

  private final Interconnect ic;
  private final PcieFabric fabric;

  /** Model for a PCIe box; the interconnect must carry a {@link PcieFabric}. */
  public PeerFabricModel(Interconnect ic) {
    if (ic.pcieFabric() == null) {
      throw new IllegalArgumentException("interconnect has no pcie_fabric");
    }
    this.ic = ic;
    this.fabric = ic.pcieFabric();
  }

  /**
   * Microseconds of one peer-memory allreduce of {@code bytes} per rank over ranks 0..n-1.
   *
   * @param launchUs the kernel's launch cost
   * @param twoShot two-shot instead of one-shot (fused moves one-shot's data)
   */
  public double allreduceUs(double bytes, int n, boolean twoShot, double launchUs) {
    if (n <= 1) {
      return 0;
    }
    double staged = bytes * STAGING_OVER_BF16;
    double perPair = twoShot ? staged / n : staged;
    int blocks = blocksFor(perPair);
    double rtt = maxRttUs(n);
    double phase = rtt + transferSeconds(perPair, n) * 1e6;
    double barrier = barrierUs(n, blocks);
    if (!twoShot) {
      return launchUs + 2 * barrier + phase;
    }
    // the all-gather walks the owners' slices one after another, each load followed by its
    // store; an SM issues in order, so a thread's load from the next owner waits for the last
    double gather = Math.max(phase, serialGatherUs(n));
    return launchUs + 3 * barrier + phase + gather;
  }

  /** Whether every pair of ranks 0..n-1 has direct peer access (no staging through the host). */
  public boolean directPeerAccess(int n) {
    for (int a = 0; a < n; a++) {
      for (int b = 0; b < n; b++) {
        if (a != b && !fabric.of(ic.path(a, b)).direct()) {
          return false;
        }
      }
    }
    return true;
  }

  /** The largest round trip between ranks 0..n-1, microseconds. */
  public double maxRttUs(int n) {
    double m = 0;
    for (int a = 0; a < n; a++) {
      for (int b = 0; b < n; b++) {
        if (a != b) {
          m = Math.max(m, fabric.of(ic.path(a, b)).rttUs());
        }
      }
    }
    return m;
  }

  /**
   * The longest chain of peer-read round trips one rank's all-gather takes when it reads the n-1
   * remote slices one after another, microseconds.
   */
  public double serialGatherUs(int n) {
    double m = 0;
    for (int a = 0; a < n; a++) {
      double sum = 0;
      for (int b = 0; b < n; b++) {
        if (a != b) {
          sum += fabric.of(ic.path(a, b)).rttUs();
        }
      }
      m = Math.max(m, sum);
    }
    return m;
  }

  /** The largest one-way posted-write latency between ranks 0..n-1, microseconds. */
  public double maxWriteUs(int n) {
    double m = 0;
    for (int a = 0; a < n; a++) {
      for (int b = 0; b < n; b++) {
        if (a != b) {
          m = Math.max(m, fabric.of(ic.path(a, b)).writeUs());
        }
      }
    }
    return m;
  }

  /**
   * Seconds for every rank to load {@code perPair} bytes (as staged, f32) from every peer at once.
   */
  public double transferSeconds(double perPair, int n) {
    FlowNetwork net = network(n);
    for (int a = 0; a < n; a++) {
      net.link(window(a), fabric.readWindowBytes());
    }
    for (int a = 0; a < n; a++) {
      for (int b = 0; b < n; b++) {
        if (a != b) {
          PcieFabric.PathClass c = fabric.of(ic.path(a, b));
          Map<String, Double> use = new HashMap<>();
          for (String l : route(b, a)) {
            use.merge(l, 1.0, Double::sum);
          }
          // reader a's outstanding requests: this flow holds rate x round trip of them
          use.put(window(a), c.rttUs() * 1e-6);
          net.flow(perPair, c.bandwidth(), use);
        }
      }
    }
    return net.makespanSeconds();
  }

  private static String window(int gpu) {
    return "gpu" + gpu + ".read-window";
  }

  /** One barrier among ranks 0..n-1 with {@code blocks} blocks per rank, microseconds. */
  public double barrierUs(int n, int blocks) {
    Map<String, Integer> writes = new HashMap<>();
    for (int a = 0; a < n; a++) {
      for (int b = 0; b < n; b++) {
        if (a != b) {
          for (String l : route(a, b)) {
            writes.merge(l, blocks, Integer::sum);
          }
        }
      }
    }
    int busiest = writes.values().stream().mapToInt(Integer::intValue).max().orElse(0);
    return maxWriteUs(n) + busiest * fabric.flagWriteNs() / 1000;
  }

  /** Blocks the engine launches for {@code bytes} per peer. */
  static int blocksFor(double bytes) {
    long work = (long) Math.ceil(bytes / BYTES_PER_THREAD);
    return (int) Math.max(1, Math.min(MAX_BLOCKS, (work + THREADS - 1) / THREADS));
  }

  private FlowNetwork network(int n) {
    FlowNetwork net = new FlowNetwork();
    for (int g = 0; g < n; g++) {
      net.link("gpu" + g + ".up", ic.linkBandwidth());
      net.link("gpu" + g + ".down", ic.linkBandwidth());
      int sw = ic.gpuSwitch().get(g);
      net.link("switch" + sw + ".up", fabric.switchUplinkBandwidth());
      net.link("switch" + sw + ".down", fabric.switchUplinkBandwidth());
      for (int s : ic.gpuSocket()) {
        if (s != ic.gpuSocket().get(g)) {
          net.link(socketLink(ic.gpuSocket().get(g), s), ic.crossSocketBandwidth());
        }
      }
    }
    return net;
  }

  /** Links data crosses from GPU {@code from} to GPU {@code to}. */
  private List<String> route(int from, int to) {
    List<String> links = new ArrayList<>();
    links.add("gpu" + from + ".up");
    int sf = ic.gpuSwitch().get(from);
    int st = ic.gpuSwitch().get(to);
    if (sf != st) {
      links.add("switch" + sf + ".up");
      int kf = ic.gpuSocket().get(from);
      int kt = ic.gpuSocket().get(to);
      if (kf != kt) {
        links.add(socketLink(kf, kt));
      }
      links.add("switch" + st + ".down");
    }
    links.add("gpu" + to + ".down");
    return links;
  }

  private static String socketLink(int from, int to) {
    return "socket" + from + ">" + to;
  }
}
