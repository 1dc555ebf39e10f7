package dev.ringmaster.cuda.topology;

import dev.ringmaster.cuda.driver.CudaDriver;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The GPUs of this host and how each pair is linked: NVLink (with the link count) or the PCIe path
 * (same switch, host bridge, across sockets), whether CUDA allows peer access, and the driver.
 * {@link #probe} reads it through the driver and NVML; tests build it from fake inputs.
 *
 * @param names GPU names, by CUDA ordinal
 * @param busIds PCI bus ids, by CUDA ordinal
 * @param driverVersion the NVIDIA driver's version (NVML's string, or CUDA's number without NVML)
 * @param links link of each ordered pair ({@link Link#SELF} on the diagonal)
 * @param nvlinks number of NVLinks between each pair (0 for PCIe)
 * @param peerAccess whether GPU i can read GPU j's memory ({@code cuDeviceCanAccessPeer})
 */
public record GpuTopology(
    List<String> names,
    List<String> busIds,
    String driverVersion,
    Link[][] links,
    int[][] nvlinks,
    boolean[][] peerAccess) {

  /** Copies the lists. */
  public GpuTopology {
    names = List.copyOf(names);
    busIds = List.copyOf(busIds);
  }

  /** Number of GPUs. */
  public int gpuCount() {
    return names.size();
  }

  /** True when no pair of distinct GPUs is linked by NVLink (a PCIe-only box). */
  public boolean pcieOnly() {
    for (int i = 0; i < gpuCount(); i++) {
      for (int j = 0; j < gpuCount(); j++) {
        if (i != j && links[i][j] == Link.NVLINK) {
          return false;
        }
      }
    }
    return true;
  }

  /** True when every GPU among the first {@code n} can access every other's memory. */
  public boolean allPeerAccess(int n) {
    for (int i = 0; i < n; i++) {
      for (int j = 0; j < n; j++) {
        if (i != j && !peerAccess[i][j]) {
          return false;
        }
      }
    }
    return true;
  }

  /** The first {@code n} GPUs, with their links. */
  public GpuTopology first(int n) {
    if (n < 1 || n > gpuCount()) {
      throw new IllegalArgumentException("asked for " + n + " of " + gpuCount() + " GPUs");
    }
    Link[][] l = new Link[n][n];
    int[][] nv = new int[n][n];
    boolean[][] p = new boolean[n][n];
    for (int i = 0; i < n; i++) {
      for (int j = 0; j < n; j++) {
        l[i][j] = links[i][j];
        nv[i][j] = nvlinks[i][j];
        p[i][j] = peerAccess[i][j];
      }
    }
    return new GpuTopology(names.subList(0, n), busIds.subList(0, n), driverVersion, l, nv, p);
  }

  /**
   * The cell text of a pair, as {@code nvidia-smi topo -m} writes it ({@code NV18}, {@code PIX}).
   */
  public String label(int i, int j) {
    Link l = links[i][j];
    return l == Link.NVLINK ? "NV" + nvlinks[i][j] : l.label();
  }

  /**
   * Everything a measured allreduce table depends on, as one line: GPU names, driver and the link
   * matrix. A cached table whose key differs is stale.
   */
  public String signature() {
    StringBuilder sb = new StringBuilder();
    sb.append(String.join(",", names)).append('|').append(driverVersion).append('|');
    for (int i = 0; i < gpuCount(); i++) {
      for (int j = 0; j < gpuCount(); j++) {
        sb.append(label(i, j))
            .append(peerAccess[i][j] ? "+" : "-")
            .append(j + 1 < gpuCount() ? " " : "");
      }
      sb.append(';');
    }
    return sb.toString();
  }

  /**
   * One line for a benchmark record: the GPUs by name and count, then the links, as one label when
   * every pair shares it ({@code NV18 between every pair}) or pair by pair ({@code 0-1 NV18, 0-2
   * PIX, ...}), then the driver.
   */
  public String summary() {
    int n = gpuCount();
    java.util.Map<String, Integer> counts = new java.util.LinkedHashMap<>();
    names.forEach(name -> counts.merge(name, 1, Integer::sum));
    StringBuilder sb = new StringBuilder();
    counts.forEach(
        (name, c) -> sb.append(sb.isEmpty() ? "" : " + ").append(c).append("x ").append(name));
    java.util.Set<String> labels = new java.util.LinkedHashSet<>();
    List<String> pairs = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      for (int j = i + 1; j < n; j++) {
        labels.add(label(i, j));
        pairs.add(i + "-" + j + " " + label(i, j));
      }
    }
    if (labels.size() == 1) {
      sb.append(", ")
          .append(labels.iterator().next())
          .append(n == 2 ? " between them" : " between every pair");
    } else if (!pairs.isEmpty()) {
      sb.append(", links ").append(String.join(", ", pairs));
    }
    return sb.append(", driver ").append(driverVersion).toString();
  }

  /**
   * The link matrix and the peer-access matrix, like {@code nvidia-smi topo -m}; with fewer than
   * two GPUs there are no links, so one line says which GPU there is instead of a 1x1 matrix of
   * self.
   */
  public String format() {
    int n = gpuCount();
    StringBuilder sb = new StringBuilder();
    if (n < 2) {
      if (n == 1) {
        sb.append("GPU0  ").append(names.getFirst()).append("  ").append(busIds.getFirst());
        sb.append(": the only GPU, so no links or peer access between GPUs to show\n");
      } else {
        sb.append("no GPUs: no topology to show\n");
      }
      return sb.append("driver ").append(driverVersion).append('\n').toString();
    }
    sb.append(String.format(Locale.ROOT, "%-6s", ""));
    for (int j = 0; j < n; j++) {
      sb.append(String.format(Locale.ROOT, "%-7s", "GPU" + j));
    }
    sb.append(" peer access (cuDeviceCanAccessPeer)\n");
    for (int i = 0; i < n; i++) {
      sb.append(String.format(Locale.ROOT, "%-6s", "GPU" + i));
      for (int j = 0; j < n; j++) {
        sb.append(String.format(Locale.ROOT, "%-7s", label(i, j)));
      }
      sb.append(' ');
      for (int j = 0; j < n; j++) {
        sb.append(i == j ? 'X' : peerAccess[i][j] ? 'Y' : 'N');
      }
      sb.append("   ").append(names.get(i)).append("  ").append(busIds.get(i)).append('\n');
    }
    sb.append("driver ").append(driverVersion).append('\n');
    sb.append(
        "Legend: X = self, NV# = # NVLinks, PIX = one PCIe switch, PXB = several PCIe switches,"
            + " PHB = PCIe host bridge, NODE = host bridges of one NUMA node, SYS = across sockets,"
            + " ? = unknown (no NVML)\n");
    return sb.toString();
  }

  /**
   * Reads the topology of every visible GPU. Never fails for want of NVML: links are then {@link
   * Link#UNKNOWN} and {@code nvmlProblem} explains in the driver field.
   */
  public static GpuTopology probe() {
    CudaDriver d = CudaDriver.get();
    d.init();
    PeerAccess pa = PeerAccess.get();
    int n = d.deviceCount();
    List<String> names = new ArrayList<>();
    List<String> bus = new ArrayList<>();
    int[] dev = new int[n];
    for (int i = 0; i < n; i++) {
      dev[i] = d.device(i);
      names.add(d.deviceName(dev[i]));
      bus.add(normalizeBusId(pa.pciBusId(dev[i])));
    }
    Link[][] links = new Link[n][n];
    int[][] nv = new int[n][n];
    boolean[][] peer = new boolean[n][n];
    for (int i = 0; i < n; i++) {
      for (int j = 0; j < n; j++) {
        links[i][j] = i == j ? Link.SELF : Link.UNKNOWN;
        peer[i][j] = i != j && pa.canAccessPeer(dev[i], dev[j]);
      }
    }
    String driver = "cuda-" + d.driverVersion();
    try (Nvml nvml = Nvml.open()) {
      driver = nvml.driverVersion();
      long[] h = new long[n];
      for (int i = 0; i < n; i++) {
        h[i] = nvml.deviceByPciBusId(bus.get(i));
      }
      for (int i = 0; i < n; i++) {
        for (int link = 0; link < Nvml.MAX_NVLINKS; link++) {
          String remote = nvml.nvLinkPeer(h[i], link);
          int j = remote == null ? -1 : bus.indexOf(normalizeBusId(remote));
          if (j >= 0 && j != i) {
            nv[i][j]++;
          }
        }
      }
      for (int i = 0; i < n; i++) {
        for (int j = 0; j < n; j++) {
          if (i == j) {
            continue;
          }
          if (nv[i][j] == 0 && nvml.p2pNvLinkOk(h[i], h[j])) {
            // far ends not matched by PCI id (GPUs passed into a virtual machine, NVSwitch):
            // count this GPU's links that are up
            nv[i][j] = Math.max(1, nvml.activeNvLinks(h[i]));
          }
          links[i][j] =
              nv[i][j] > 0 ? Link.NVLINK : Link.ofNvmlLevel(nvml.commonAncestor(h[i], h[j]));
        }
      }
    } catch (IllegalStateException e) {
      driver = driver + " (no NVML: " + e.getMessage() + ")";
    }
    return new GpuTopology(names, bus, driver, links, nv, peer);
  }

  /**
   * A PCI bus id as {@code dddd:bb:dd.f} in lower case: CUDA writes a 4-digit domain, NVML an
   * 8-digit one.
   */
  static String normalizeBusId(String id) {
    String s = id.trim().toLowerCase(Locale.ROOT);
    int colon = s.indexOf(':');
    if (colon < 0) {
      return s;
    }
    long domain = Long.parseLong(s.substring(0, colon), 16);
    return String.format(Locale.ROOT, "%04x", domain) + s.substring(colon);
  }
}
