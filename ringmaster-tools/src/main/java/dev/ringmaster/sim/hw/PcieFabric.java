package dev.ringmaster.sim.hw;

import java.util.Map;

/**
 * The PCIe tree of a box without NVLink, as {@code nvidia-smi topo -m} describes it: each GPU's
 * port under a PCIe switch ({@link Interconnect#gpuSwitch}), each switch's uplink to its socket's
 * root complex, and the socket link between the two root complexes ({@link
 * Interconnect#crossSocketBandwidth}). Peer-memory collectives are timed over it by {@link
 * PeerFabricModel}: every flow routed over these links, link capacity shared max-min fairly per
 * direction.
 *
 * @param paths per path class, keyed as {@code nvidia-smi topo -m} prints them: {@code PIX} (same
 *     switch), {@code NODE} (same socket, different switches) and {@code SYS} (across sockets)
 * @param switchUplinkBandwidth bytes/s per direction of one switch's uplink to its root complex,
 *     shared by the GPUs beneath it
 * @param readWindowBytes bytes of non-posted reads one GPU keeps in flight to its peers, all peers
 *     together: the reader's flows share it, each holding its rate times its path's round trip
 *     (Little's law), so a far peer costs more of the window per byte than a near one
 * @param flagWriteNs time one posted 4-byte flag write takes at a link it crosses (small TLPs
 *     forwarded peer to peer by a root complex or the socket link), nanoseconds
 */
public record PcieFabric(
    Map<String, PathClass> paths,
    double switchUplinkBandwidth,
    double readWindowBytes,
    double flagWriteNs) {

  /**
   * One path class between two GPUs.
   *
   * @param bandwidth most bytes/s one peer-to-peer flow reaches on this path, per direction
   * @param rttUs round trip of a peer read (non-posted: the request goes out, the completion comes
   *     back) while every GPU reads from every peer, microseconds
   * @param writeUs one-way latency of a posted peer write (a flag store: no completion returns),
   *     microseconds
   * @param peerAccess {@code direct} (loads and stores to peer memory) or {@code staged} (no peer
   *     access: data goes through host memory, so peer-memory kernels cannot run)
   */
  public record PathClass(double bandwidth, double rttUs, double writeUs, String peerAccess) {
    /** Whether kernels can load from and store to the peer's memory directly. */
    public boolean direct() {
      return "direct".equalsIgnoreCase(peerAccess);
    }
  }

  /** Validates that every path class is present and positive. */
  public PcieFabric {
    if (paths == null) {
      throw new IllegalArgumentException("pcie_fabric.paths must list PIX, NODE and SYS");
    }
    for (String k : new String[] {"PIX", "NODE", "SYS"}) {
      PathClass c = paths.get(k);
      if (c == null
          || !(c.bandwidth() > 0)
          || !(c.rttUs() > 0)
          || !(c.writeUs() > 0)
          || c.peerAccess() == null
          || !(c.peerAccess().equalsIgnoreCase("direct")
              || c.peerAccess().equalsIgnoreCase("staged"))) {
        throw new IllegalArgumentException(
            "pcie_fabric.paths."
                + k
                + " needs a positive bandwidth, rtt_us and write_us and peer_access direct|staged");
      }
    }
    if (!(switchUplinkBandwidth > 0) || !(readWindowBytes > 0) || flagWriteNs < 0) {
      throw new IllegalArgumentException(
          "pcie_fabric needs positive switch_uplink_bandwidth and read_window_bytes and a"
              + " non-negative flag_write_ns");
    }
  }

  /** The class of a path as {@code nvidia-smi topo -m} names it. */
  public static String topoName(Interconnect.Path path) {
    return switch (path) {
      case SAME_SWITCH -> "PIX";
      case SAME_SOCKET -> "NODE";
      case CROSS_SOCKET -> "SYS";
      case NVLINK -> throw new IllegalArgumentException("NVLink is not a PCIe path");
    };
  }

  /** The constants of a path. */
  public PathClass of(Interconnect.Path path) {
    return paths.get(topoName(path));
  }
}
