package dev.ringmaster.cuda.topology;

/**
 * How two GPUs are connected, in {@code nvidia-smi topo -m}'s terms, best first. For PCIe the level
 * says how far the common ancestor is, which is what limits peer-to-peer bandwidth.
 */
public enum Link {
  /** The GPU itself. */
  SELF("X"),
  /** One or more NVLinks (the count is kept beside the link in {@link GpuTopology}). */
  NVLINK("NV"),
  /** PCIe through a single switch. */
  PIX("PIX"),
  /** PCIe through several switches, without the host bridge. */
  PXB("PXB"),
  /** PCIe through the host bridge (the CPU's root complex). */
  PHB("PHB"),
  /** PCIe across host bridges of one NUMA node. */
  NODE("NODE"),
  /** PCIe across sockets (the SMP interconnect between NUMA nodes). */
  SYS("SYS"),
  /** Not known (NVML missing). */
  UNKNOWN("?");

  private final String label;

  Link(String label) {
    this.label = label;
  }

  /** The matrix label ({@code NV} takes the link count after it). */
  public String label() {
    return label;
  }

  /** The link for an {@code nvmlGpuTopologyLevel_t} of two distinct GPUs. */
  public static Link ofNvmlLevel(int level) {
    return switch (level) {
      case 0, 10 -> PIX; // INTERNAL (same board), SINGLE switch
      case 20 -> PXB;
      case 30 -> PHB;
      case 40 -> NODE;
      case 50 -> SYS;
      default -> UNKNOWN;
    };
  }
}
