package dev.ringmaster.sim.hw;

import java.util.List;

/**
 * How the GPUs of a box are linked. The path between a pair follows from where each GPU sits: same
 * NVLink domain, same PCIe switch, same CPU socket, or across sockets.
 *
 * @param type "nvlink" (all pairs through NVSwitch) or "pcie"
 * @param pcieGen PCIe generation of each GPU's link
 * @param pcieLanes PCIe lanes of each GPU's link
 * @param linkBandwidth achievable bandwidth of one GPU's own link (NVLink total or its PCIe slot),
 *     bytes/s per direction
 * @param gpuSocket CPU socket of each GPU
 * @param gpuSwitch PCIe switch (or root port) of each GPU
 * @param crossSocketBandwidth achievable GPU-to-GPU bandwidth across the socket interconnect,
 *     bytes/s per direction, all flows together
 * @param peerReadEfficiency fraction of link bandwidth a kernel that loads from peer memory reaches
 *     (remote reads are non-posted and have few requests in flight); the uncalibrated model, which
 *     calibrated per-kernel constants ({@link CollectiveSpec#peer}) replace
 * @param peerSyncUs one barrier among all ranks through peer-memory flags, microseconds; the
 *     uncalibrated model, as {@code peerReadEfficiency}
 * @param pcieFabric the PCIe tree with per-path-class constants, or null; where present on a PCIe
 *     box, uncalibrated peer-memory kernels are timed over it ({@link PeerFabricModel}) instead of
 *     by {@code peerReadEfficiency} and {@code peerSyncUs}
 */
public record Interconnect(
    String type,
    int pcieGen,
    int pcieLanes,
    double linkBandwidth,
    List<Integer> gpuSocket,
    List<Integer> gpuSwitch,
    double crossSocketBandwidth,
    double peerReadEfficiency,
    double peerSyncUs,
    PcieFabric pcieFabric) {

  /** Validates the placement lists against each other. */
  public Interconnect {
    if (type == null) {
      throw new IllegalArgumentException("interconnect.type must be nvlink or pcie");
    }
    if (gpuSocket == null || gpuSwitch == null || gpuSocket.size() != gpuSwitch.size()) {
      throw new IllegalArgumentException(
          "interconnect.gpu_socket and gpu_switch must list one entry per GPU each");
    }
  }

  /** Path classes between two GPUs. */
  public enum Path {
    /** NVLink (through NVSwitch). */
    NVLINK,
    /** PCIe, both GPUs under one switch. */
    SAME_SWITCH,
    /** PCIe, same CPU socket, different switches/root ports. */
    SAME_SOCKET,
    /** PCIe through the CPU socket interconnect. */
    CROSS_SOCKET
  }

  /** Whether GPUs talk over NVLink. */
  public boolean nvlink() {
    return "nvlink".equalsIgnoreCase(type);
  }

  /** Path between GPU {@code a} and GPU {@code b}. */
  public Path path(int a, int b) {
    if (nvlink()) {
      return Path.NVLINK;
    }
    if (!gpuSocket.get(a).equals(gpuSocket.get(b))) {
      return Path.CROSS_SOCKET;
    }
    return gpuSwitch.get(a).equals(gpuSwitch.get(b)) ? Path.SAME_SWITCH : Path.SAME_SOCKET;
  }

  /**
   * Bytes that cross the socket interconnect in one direction when each of the first {@code n} GPUs
   * sends {@code bytesPerPair} to every other one at once.
   */
  public double crossSocketBytesAllToAll(int n, double bytesPerPair) {
    if (nvlink()) {
      return 0;
    }
    double flows = 0;
    for (int a = 0; a < n; a++) {
      for (int b = 0; b < n; b++) {
        if (a != b && path(a, b) == Path.CROSS_SOCKET) {
          flows++;
        }
      }
    }
    // flows counts both directions; the link is full duplex.
    return flows / 2 * bytesPerPair;
  }
}
