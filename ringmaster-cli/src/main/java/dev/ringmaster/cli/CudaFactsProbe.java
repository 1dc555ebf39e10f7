package dev.ringmaster.cli;

import dev.ringmaster.cuda.CudaProbe;
import dev.ringmaster.cuda.CudaRuntime;
import dev.ringmaster.cuda.blas.Cublas;
import dev.ringmaster.cuda.collective.AllReduceRule;
import dev.ringmaster.cuda.collective.AllReduceTableCache;
import dev.ringmaster.cuda.collective.AllReduceTuner;
import dev.ringmaster.cuda.driver.CudaDriver;
import dev.ringmaster.cuda.driver.DeviceInfo;
import dev.ringmaster.cuda.kernels.KernelImage;
import dev.ringmaster.cuda.nccl.Nccl;
import dev.ringmaster.cuda.topology.GpuTopology;
import dev.ringmaster.cuda.topology.Nvml;
import dev.ringmaster.cuda.topology.PciLocality;
import dev.ringmaster.cuda.topology.PeerCopyCheck;
import dev.ringmaster.tools.doctor.GpuFacts;
import java.util.ArrayList;
import java.util.List;

/**
 * Fills {@link GpuFacts} from the CUDA probes: {@link CudaRuntime#probe}, the driver's device
 * attributes and free memory, NVML (driver version, clocks, NVLinks), {@link GpuTopology}, a peer
 * copy per ordered pair, sysfs locality, the libraries (cuBLAS, NCCL, NVML) and the measured
 * allreduce tables whose key matches this host. Every part that fails is reported, never thrown.
 */
final class CudaFactsProbe {
  /** The peer kernels' staging size the engine uses (DeviceWorld's default). */
  private static final long CUSTOM_MAX_BYTES = 8 << 20;

  private CudaFactsProbe() {}

  static GpuFacts probe(AllReduceTableCache cache) {
    String nvcc = KernelImage.nvccVersion();
    List<String> targets = KernelImage.targets();
    CudaProbe p = CudaRuntime.probe();
    List<GpuFacts.Library> libs = new ArrayList<>();
    String nccl = ncclVersion(libs);
    if (p.devices().isEmpty()) {
      return GpuFacts.none(p.reason(), nvcc, targets, libs);
    }
    libs.addFirst(cublas());
    String driver = "cuda-" + p.driverVersion();
    List<Integer> sm = new ArrayList<>();
    List<Integer> mem = new ArrayList<>();
    List<Integer> links = new ArrayList<>();
    GpuTopology topo = GpuTopology.probe();
    try (Nvml nvml = Nvml.open()) {
      driver = nvml.driverVersion();
      libs.add(new GpuFacts.Library("NVML", nvml.nvmlVersion(), "libnvidia-ml.so.1", ""));
      for (int i = 0; i < p.devices().size(); i++) {
        long h = nvml.deviceByPciBusId(topo.busIds().get(i));
        sm.add(nvml.maxSmClockMhz(h));
        mem.add(nvml.maxMemoryClockMhz(h));
        links.add(nvml.activeNvLinks(h));
      }
    } catch (RuntimeException | LinkageError e) {
      libs.add(new GpuFacts.Library("NVML", "", "", e.getMessage()));
    }
    List<GpuFacts.Gpu> gpus = new ArrayList<>();
    for (DeviceInfo d : p.devices()) {
      int i = d.ordinal();
      String bus = topo.busIds().get(i);
      gpus.add(
          new GpuFacts.Gpu(
              i,
              d.name(),
              d.major(),
              d.minor(),
              d.multiprocessors(),
              d.totalMemory(),
              freeBytes(i),
              i < sm.size() ? sm.get(i) : 0,
              i < mem.size() ? mem.get(i) : 0,
              bus,
              PciLocality.numaNode(bus),
              PciLocality.localCpus(bus),
              i < links.size() ? links.get(i) : 0));
    }
    return new GpuFacts(
        p.available() || !KernelImage.isBuilt() ? "" : p.reason(),
        p.driverVersion(),
        driver,
        nvcc,
        targets,
        gpus,
        libs,
        topology(topo),
        nccl,
        nccl == null ? List.of() : measured(topo, nccl, cache));
  }

  private static GpuFacts.Topology topology(GpuTopology t) {
    int n = t.gpuCount();
    List<List<String>> labels = new ArrayList<>();
    List<List<Boolean>> access = new ArrayList<>();
    List<List<String>> copy = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      List<String> l = new ArrayList<>();
      List<Boolean> a = new ArrayList<>();
      List<String> c = new ArrayList<>();
      for (int j = 0; j < n; j++) {
        l.add(t.label(i, j));
        a.add(i != j && t.peerAccess()[i][j]);
        c.add(i == j ? "self" : t.peerAccess()[i][j] ? PeerCopyCheck.check(i, j) : "not tried");
      }
      labels.add(l);
      access.add(a);
      copy.add(c);
    }
    return new GpuFacts.Topology(labels, access, copy, n > 1 && t.pcieOnly(), t.format());
  }

  private static long freeBytes(int ordinal) {
    try {
      CudaDriver d = CudaDriver.get();
      int dev = d.device(ordinal);
      long ctx = d.primaryContextRetain(dev);
      try {
        d.setCurrentContext(ctx);
        return d.memoryInfo()[0];
      } finally {
        d.primaryContextRelease(dev);
      }
    } catch (RuntimeException e) {
      return -1;
    }
  }

  private static GpuFacts.Library cublas() {
    try {
      Cublas c = Cublas.get();
      return new GpuFacts.Library("cuBLAS", c.version(), c.source(), "");
    } catch (RuntimeException | LinkageError e) {
      return new GpuFacts.Library("cuBLAS", "", "", e.getMessage());
    }
  }

  private static String ncclVersion(List<GpuFacts.Library> libs) {
    try {
      String v = Nccl.versionString(Nccl.get().version());
      String path = System.getenv("RINGMASTER_NCCL_LIBRARY");
      libs.add(new GpuFacts.Library("NCCL", v, path != null ? path : "libnccl.so.2", ""));
      return v;
    } catch (RuntimeException | LinkageError e) {
      libs.add(new GpuFacts.Library("NCCL", "", "", e.getMessage()));
      return null;
    }
  }

  /** The cached tables, for 2..n GPUs, whose key is this host's key now. */
  private static List<GpuFacts.MeasuredTable> measured(
      GpuTopology topo, String nccl, AllReduceTableCache cache) {
    List<GpuFacts.MeasuredTable> out = new ArrayList<>();
    for (int n = 2; n <= topo.gpuCount(); n++) {
      GpuTopology t = topo.first(n);
      AllReduceRule.Facts f =
          new AllReduceRule.Facts(n, t.pcieOnly(), t.allPeerAccess(n), false, CUSTOM_MAX_BYTES);
      if (cache.lookup(n, AllReduceTuner.key(t, nccl, f)) instanceof AllReduceTableCache.Hit h) {
        var table = h.entry().table();
        out.add(new GpuFacts.MeasuredTable(n, table.usesPeerMemory(), table.toString()));
      }
    }
    return out;
  }
}
