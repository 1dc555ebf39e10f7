package dev.ringmaster.tools.doctor;

import java.util.ArrayList;
import java.util.List;

/** Made-up hosts for the verdict tests: a number of GPUs of one kind, linked one way. */
public final class FakeFacts {
  static final long GIB = 1L << 30;

  private FakeFacts() {}

  public static HostFacts host() {
    return new HostFacts(
        "Linux 6.1",
        "amd64",
        "Test CPU",
        16,
        512,
        128 * GIB,
        100 * GIB,
        8 * GIB,
        List.of("node0: cpus 0-15"),
        "25",
        "Test");
  }

  static List<GpuFacts.Library> libraries(boolean nccl) {
    return List.of(
        new GpuFacts.Library("cuBLAS", "13.1.0", "/usr/local/cuda/lib64/libcublas.so.13", ""),
        nccl
            ? new GpuFacts.Library("NCCL", "2.28.3", "libnccl.so.2", "")
            : new GpuFacts.Library(
                "NCCL", "", "", "NCCL cannot be loaded (libnccl.so.2): install NCCL 2"),
        new GpuFacts.Library("NVML", "13.580", "libnvidia-ml.so.1", ""));
  }

  /**
   * {@code n} GPUs of compute capability {@code cc} (90 for 9.0), every pair linked by {@code
   * link}.
   */
  public static GpuFacts gpus(int n, int cc, String link, boolean peer, boolean nccl) {
    List<GpuFacts.Gpu> gpus = new ArrayList<>();
    List<List<String>> labels = new ArrayList<>();
    List<List<Boolean>> access = new ArrayList<>();
    List<List<String>> copy = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      gpus.add(
          new GpuFacts.Gpu(
              i,
              "NVIDIA Test",
              cc / 10,
              cc % 10,
              132,
              140 * GIB,
              139 * GIB,
              1980,
              3201,
              "0000:0" + i + ":00.0",
              0,
              "0-15",
              link.startsWith("NV") ? 18 : 0));
      List<String> l = new ArrayList<>();
      List<Boolean> a = new ArrayList<>();
      List<String> c = new ArrayList<>();
      for (int j = 0; j < n; j++) {
        l.add(i == j ? "X" : link);
        a.add(i != j && peer);
        c.add(i == j ? "self" : peer ? "ok" : "not tried");
      }
      labels.add(l);
      access.add(a);
      copy.add(c);
    }
    GpuFacts.Topology t =
        new GpuFacts.Topology(labels, access, copy, !link.startsWith("NV"), "matrix\n");
    return new GpuFacts(
        "",
        13000,
        "580.1",
        "13.0",
        List.of("sm_90", "sm_120", "compute_90"),
        gpus,
        libraries(nccl),
        t,
        nccl ? "2.28.3" : null,
        List.of());
  }

  public static GpuFacts noGpu() {
    return GpuFacts.none(
        "no NVIDIA driver: libcuda.so.1 cannot be loaded",
        "13.0",
        List.of("sm_90", "sm_120", "compute_90"),
        List.of());
  }
}
