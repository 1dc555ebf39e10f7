package dev.ringmaster.tools.doctor;

import java.util.List;

/**
 * The GPU side of this host as the CUDA probes found it; the command line fills it, tests make it
 * up. Without a driver or a GPU, {@link #problem} says why and the lists are empty.
 *
 * @param problem why CUDA cannot run here (no driver, no GPU, driver too old), or "" when it can
 * @param cudaDriverVersion the CUDA version the driver supports (e.g. 13000), 0 when unknown
 * @param driverVersion the NVIDIA driver's version (NVML), or "unknown"
 * @param kernelsNvcc the nvcc version the project's kernels were built with, or "absent"
 * @param kernelTargets the fatbin's targets ({@code sm_90}, {@code sm_120}, {@code compute_90})
 * @param gpus every visible GPU, by CUDA ordinal
 * @param libraries the libraries looked for (cuBLAS, NCCL, NVML), found or not
 * @param topology how the GPUs are linked, or null without a GPU
 * @param ncclVersion NCCL's version ({@code 2.28.3}), or null when NCCL cannot be loaded
 * @param measuredTables the measured allreduce tables cached for this host's current key
 */
public record GpuFacts(
    String problem,
    int cudaDriverVersion,
    String driverVersion,
    String kernelsNvcc,
    List<String> kernelTargets,
    List<Gpu> gpus,
    List<Library> libraries,
    Topology topology,
    String ncclVersion,
    List<MeasuredTable> measuredTables) {

  /** Copies the lists. */
  public GpuFacts {
    kernelTargets = List.copyOf(kernelTargets);
    gpus = List.copyOf(gpus);
    libraries = List.copyOf(libraries);
    measuredTables = List.copyOf(measuredTables);
  }

  /** No usable GPU, for {@code reason}; the kernels' build record and libraries still reported. */
  public static GpuFacts none(
      String reason, String kernelsNvcc, List<String> kernelTargets, List<Library> libraries) {
    return new GpuFacts(
        reason,
        0,
        "unknown",
        kernelsNvcc,
        kernelTargets,
        List.of(),
        libraries,
        null,
        null,
        List.of());
  }

  /** Whether CUDA can run here. */
  public boolean available() {
    return problem.isEmpty() && !gpus.isEmpty();
  }

  /** The measured table for {@code worldSize} GPUs, or null. */
  public MeasuredTable measured(int worldSize) {
    return measuredTables.stream().filter(t -> t.worldSize() == worldSize).findFirst().orElse(null);
  }

  /**
   * One GPU.
   *
   * @param index CUDA ordinal
   * @param name e.g. {@code NVIDIA H200}
   * @param ccMajor compute capability major
   * @param ccMinor compute capability minor
   * @param multiprocessors SM count
   * @param totalBytes device memory
   * @param freeBytes free device memory, -1 when it could not be read
   * @param smClockMhz the SM clock's maximum (NVML), 0 when unknown
   * @param memoryClockMhz the memory clock's maximum (NVML), 0 when unknown
   * @param busId PCI bus id
   * @param numaNode the NUMA node the GPU's PCIe slot belongs to, -1 when unknown
   * @param localCpus the CPUs close to the GPU ({@code local_cpulist}), "" when unknown
   * @param nvlinksUp NVLinks of this GPU that are up (NVML), 0 for none or unknown
   */
  public record Gpu(
      int index,
      String name,
      int ccMajor,
      int ccMinor,
      int multiprocessors,
      long totalBytes,
      long freeBytes,
      int smClockMhz,
      int memoryClockMhz,
      String busId,
      int numaNode,
      String localCpus,
      int nvlinksUp) {

    /** {@code sm_90} for compute capability 9.0. */
    public String arch() {
      return "sm_" + ccMajor + ccMinor;
    }

    /** Compute capability as one number: 90 for 9.0, 120 for 12.0. */
    public int cc() {
      return ccMajor * 10 + ccMinor;
    }
  }

  /**
   * A shared library the engine uses.
   *
   * @param name e.g. {@code cuBLAS}
   * @param version its version, or "" when unknown
   * @param source the path or soname it was loaded from, or "" when not found
   * @param problem why it cannot be loaded, or "" when it loaded
   */
  public record Library(String name, String version, String source, String problem) {
    /** Whether it loaded. */
    public boolean loaded() {
      return problem.isEmpty();
    }
  }

  /**
   * How the GPUs are linked.
   *
   * @param labels each pair's link as {@code nvidia-smi topo -m} writes it ({@code X}, {@code
   *     NV18}, {@code PIX}, {@code SYS}, {@code ?})
   * @param peerAccess whether GPU i may read GPU j's memory ({@code cuDeviceCanAccessPeer})
   * @param peerCopy the small peer copy from j to i: {@code ok}, {@code failed: ...} or {@code not
   *     tried}
   * @param pcieOnly no pair is linked by NVLink
   * @param matrix the matrix as printed text
   */
  public record Topology(
      List<List<String>> labels,
      List<List<Boolean>> peerAccess,
      List<List<String>> peerCopy,
      boolean pcieOnly,
      String matrix) {

    /** Copies the lists. */
    public Topology {
      labels = labels.stream().map(List::copyOf).toList();
      peerAccess = peerAccess.stream().map(List::copyOf).toList();
      peerCopy = peerCopy.stream().map(List::copyOf).toList();
    }

    /** The first pair among the first {@code n} GPUs without peer access, or null. */
    public String missingPeerAccess(int n) {
      for (int i = 0; i < n; i++) {
        for (int j = 0; j < n; j++) {
          if (i != j && !peerAccess.get(i).get(j)) {
            return "GPU"
                + i
                + " cannot access GPU"
                + j
                + "'s memory ("
                + labels.get(i).get(j)
                + ")";
          }
        }
      }
      return null;
    }

    /** The first failed peer copy among the first {@code n} GPUs, or null. */
    public String failedPeerCopy(int n) {
      for (int i = 0; i < n; i++) {
        for (int j = 0; j < n; j++) {
          String c = peerCopy.get(i).get(j);
          if (i != j && c.startsWith("failed")) {
            return "peer copy GPU" + j + " -> GPU" + i + " " + c;
          }
        }
      }
      return null;
    }

    /** The distinct labels between pairs of the first {@code n} GPUs, joined by "/". */
    public String linkSummary(int n) {
      java.util.Set<String> s = new java.util.LinkedHashSet<>();
      for (int i = 0; i < n; i++) {
        for (int j = i + 1; j < n; j++) {
          s.add(labels.get(i).get(j));
        }
      }
      return String.join("/", s);
    }
  }

  /**
   * A measured allreduce table in the cache {@code --allreduce auto} reads, whose key matches this
   * host now.
   *
   * @param worldSize GPUs it was measured on
   * @param usesPeerMemory whether some size runs a peer-memory kernel
   * @param table the table as text
   */
  public record MeasuredTable(int worldSize, boolean usesPeerMemory, String table) {}
}
