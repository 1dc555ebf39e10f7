package dev.ringmaster.tools.doctor;

import static dev.ringmaster.tools.doctor.HostFacts.gib;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The verdicts: one {@link FeatureCheck} per feature of the engine, from the facts alone (no probe
 * runs here). Requirements come from the engine: the kernels are SASS for sm_90 and sm_120 plus
 * compute_90 PTX and use Hopper instructions (programmatic dependent launch, clusters); peer-memory
 * allreduce needs peer access between every pair and is refused on more than two PCIe-only GPUs
 * unless a measured table chose it ({@code AllReduceRule}); the GPU backend runs bf16 MLA models.
 */
public final class Doctor {
  /** Hopper: the oldest architecture the kernels run on. */
  static final int MIN_CC = 90;

  private Doctor() {}

  /** Every check, the model's last when {@code model} is given. */
  public static List<FeatureCheck> check(
      HostFacts host, GpuFacts gpu, DoctorTarget target, ModelNeeds model) {
    List<FeatureCheck> out = new ArrayList<>();
    out.add(
        FeatureCheck.ok(
            "cpu-engine",
            String.format(
                Locale.ROOT,
                "Java %s, %d cores, %d-bit float vectors (Vector API)",
                host.javaVersion(),
                host.cores(),
                host.vectorBits())));
    out.add(
        FeatureCheck.ok(
            "cpu-collectives",
            "ring, one-shot, two-shot and recursive doubling between in-process ranks"));
    out.add(
        FeatureCheck.ok(
            "multi-node-cpu",
            "TCP between nodes (--nnodes, --dist-init-addr); reaching the other nodes is not"
                + " checked here"));
    FeatureCheck device = device(gpu);
    out.add(device);
    FeatureCheck kernels = kernels(gpu);
    out.add(kernels);
    out.add(library(gpu, "cuBLAS", "cublas", "GEMMs of prefill-sized steps"));
    out.add(graphs(gpu, kernels));
    out.add(pdl(gpu, kernels));
    out.add(nccl(gpu, target));
    for (String algo : List.of("oneshot", "twoshot", "fused")) {
      out.add(peerAllReduce(gpu, target, kernels, algo));
    }
    out.add(allToAll(gpu, target, model));
    out.add(quantizedWeights("fp8-weights", "DeepSeek FP8 block-scaled", gpu, target, kernels));
    out.add(quantizedWeights("nvfp4-weights", "ModelOpt NVFP4", gpu, target, kernels));
    out.add(fp8(gpu));
    out.add(fp4(gpu));
    out.add(sparseAttention(gpu, target, kernels, model));
    out.add(multiNodeGpu(gpu));
    if (model != null) {
      out.addAll(ModelFit.check(host, gpu, target, model));
    }
    return out;
  }

  static FeatureCheck device(GpuFacts g) {
    String f = "cuda-device";
    if (g.available()) {
      GpuFacts.Gpu first = g.gpus().getFirst();
      return FeatureCheck.ok(
          f,
          g.gpus().size()
              + " GPU(s), "
              + first.name()
              + " "
              + first.arch()
              + ", driver "
              + g.driverVersion()
              + " (CUDA "
              + cudaVersion(g.cudaDriverVersion())
              + ")");
    }
    String p = g.problem().isEmpty() ? "the driver reports no GPU" : g.problem();
    boolean software = p.contains("driver is installed") || p.contains("lacks");
    return software ? FeatureCheck.software(f, p) : FeatureCheck.hardware(f, p);
  }

  /** Whether this host can load and run the kernels, and how well that is known. */
  static FeatureCheck kernels(GpuFacts g) {
    String f = "gpu-kernels";
    if (g.kernelsNvcc().equals("absent")) {
      return FeatureCheck.software(
          f, "this build holds no GPU kernels (built without nvcc): install CUDA 13 and rebuild");
    }
    if (!g.available()) {
      return FeatureCheck.hardware(f, "no usable GPU (see cuda-device)");
    }
    int needed = nvccAsCuda(g.kernelsNvcc());
    if (g.cudaDriverVersion() > 0 && needed > g.cudaDriverVersion()) {
      return FeatureCheck.software(
          f,
          "kernels built with nvcc "
              + g.kernelsNvcc()
              + " need a driver for CUDA "
              + cudaVersion(needed)
              + "; this driver supports CUDA "
              + cudaVersion(g.cudaDriverVersion()));
    }
    GpuFacts.Gpu oldest = oldest(g);
    if (oldest.cc() < MIN_CC) {
      return FeatureCheck.hardware(
          f,
          "GPU"
              + oldest.index()
              + " is "
              + oldest.arch()
              + "; the kernels need sm_90 or newer (Hopper instructions: PDL, clusters)");
    }
    List<String> targets = g.kernelTargets();
    String arch = oldest.arch();
    if (oldest.cc() == MIN_CC && targets.contains(arch)) {
      return FeatureCheck.ok(f, "sm_90 SASS in the fatbin, the architecture the GPU tests run on");
    }
    if (targets.contains(arch)) {
      return FeatureCheck.untested(
          f, arch + " SASS is in the fatbin but the project's GPU tests have not run on " + arch);
    }
    return FeatureCheck.untested(
        f,
        "no "
            + arch
            + " SASS in the fatbin "
            + targets
            + ": the driver JIT-compiles the compute_90 PTX, never checked on "
            + arch);
  }

  private static FeatureCheck library(GpuFacts g, String name, String feature, String use) {
    for (GpuFacts.Library l : g.libraries()) {
      if (l.name().equals(name)) {
        if (!l.loaded()) {
          return FeatureCheck.software(feature, l.problem());
        }
        return FeatureCheck.ok(
            feature,
            name
                + (l.version().isEmpty() ? "" : " " + l.version())
                + " at "
                + l.source()
                + ": "
                + use);
      }
    }
    return FeatureCheck.hardware(feature, "no usable GPU (see cuda-device)");
  }

  static FeatureCheck graphs(GpuFacts g, FeatureCheck kernels) {
    String f = "cuda-graphs";
    if (kernels.verdict() != Verdict.OK) {
      return new FeatureCheck(f, kernels.verdict(), "needs the GPU kernels: " + kernels.reason());
    }
    return FeatureCheck.ok(
        f,
        "stream capture and replay of decode steps (driver CUDA "
            + cudaVersion(g.cudaDriverVersion())
            + ")");
  }

  static FeatureCheck pdl(GpuFacts g, FeatureCheck kernels) {
    String f = "pdl";
    if (kernels.verdict() != Verdict.OK && kernels.verdict() != Verdict.UNTESTED) {
      return new FeatureCheck(f, kernels.verdict(), kernels.reason());
    }
    GpuFacts.Gpu oldest = oldest(g);
    if (kernels.verdict() == Verdict.UNTESTED) {
      return FeatureCheck.untested(
          f,
          "programmatic dependent launch needs sm_90+ ("
              + oldest.arch()
              + " has it); "
              + kernels.reason());
    }
    return FeatureCheck.ok(
        f, "programmatic dependent launch (griddepcontrol, sm_90+) on " + oldest.arch());
  }

  static FeatureCheck nccl(GpuFacts g, DoctorTarget t) {
    String f = "allreduce-nccl";
    if (g.ncclVersion() == null) {
      return FeatureCheck.software(f, libraryProblem(g, "NCCL", "NCCL cannot be loaded"));
    }
    if (g.gpus().size() < 2) {
      return FeatureCheck.hardware(
          f,
          g.gpus().size()
              + " GPU(s): an allreduce between GPUs needs two (NCCL "
              + g.ncclVersion()
              + " found)");
    }
    return FeatureCheck.ok(
        f,
        "NCCL "
            + g.ncclVersion()
            + " (ring or tree, NCCL's choice) over "
            + g.topology().linkSummary(g.gpus().size()));
  }

  /** One-shot, two-shot and fused peer-memory allreduce at the configured world size. */
  static FeatureCheck peerAllReduce(GpuFacts g, DoctorTarget t, FeatureCheck kernels, String algo) {
    String f = "allreduce-" + algo;
    int n = Math.max(2, t.worldSize());
    if (g.gpus().size() < n) {
      return FeatureCheck.hardware(
          f, "peer-memory allreduce over " + n + " GPUs; this host has " + g.gpus().size());
    }
    if (kernels.verdict() != Verdict.OK && kernels.verdict() != Verdict.UNTESTED) {
      return new FeatureCheck(f, kernels.verdict(), kernels.reason());
    }
    GpuFacts.Topology topo = g.topology();
    String missing = topo.missingPeerAccess(n);
    if (missing != null) {
      return FeatureCheck.hardware(f, missing + ": peer kernels need access between every pair");
    }
    String failed = topo.failedPeerCopy(n);
    if (failed != null) {
      return FeatureCheck.hardware(f, failed);
    }
    boolean pcieOnly = topo.pcieOnly();
    if (pcieOnly && n > 2) {
      GpuFacts.MeasuredTable m = g.measured(n);
      if (m != null && m.usesPeerMemory()) {
        return FeatureCheck.ok(
            f, "measured faster than NCCL on these " + n + " PCIe-only GPUs: " + m.table());
      }
      return FeatureCheck.hardware(
          f,
          n
              + " PCIe-only GPUs: every GPU reading every other contends for the links, so"
              + " peer kernels run only where measured 10% faster than NCCL"
              + (m == null
                  ? " (no measurement: doctor --measure)"
                  : " (measured: " + m.table() + ")"));
    }
    String how =
        algo.equals("fused")
            ? "one-shot fused with the residual add and RMSNorm"
            : algo.equals("oneshot") ? "every rank reads every peer" : "reduce-scatter then gather";
    FeatureCheck ok =
        FeatureCheck.ok(
            f, how + ", peer access between all " + n + " GPUs over " + topo.linkSummary(n));
    return kernels.verdict() == Verdict.UNTESTED
        ? FeatureCheck.untested(f, ok.reason() + "; " + kernels.reason())
        : ok;
  }

  static FeatureCheck allToAll(GpuFacts g, DoctorTarget t, ModelNeeds m) {
    String f = "expert-all-to-all";
    int n = Math.max(2, t.epSize());
    if (g.ncclVersion() == null) {
      return FeatureCheck.software(
          f,
          "dispatch and combine are NCCL send/recv: "
              + libraryProblem(g, "NCCL", "NCCL cannot be loaded"));
    }
    if (g.gpus().size() < n) {
      return FeatureCheck.hardware(
          f, "expert parallelism over " + n + " GPUs; this host has " + g.gpus().size());
    }
    if (m == null || m.a2aBytes() == 0) {
      return FeatureCheck.ok(
          f,
          "NCCL send/recv between "
              + n
              + " GPUs; buffers sized with --model and --ep-size --moe-a2a-backend all-to-all");
    }
    long free = minFree(g, n);
    String size =
        "buffers "
            + gib(m.a2aBytes())
            + " at --chunked-prefill-size "
            + t.chunkedPrefillSize()
            + " plus weights "
            + gib(m.gpuWeightsBytes());
    if (free >= 0 && m.a2aBytes() + m.gpuWeightsBytes() > free) {
      return FeatureCheck.hardware(
          f, size + " exceed the " + gib(free) + " free on a GPU: lower --chunked-prefill-size");
    }
    return FeatureCheck.ok(f, size + (free >= 0 ? " fit in " + gib(free) + " free" : ""));
  }

  /**
   * Quantized checkpoints of {@code format}: weight-only kernels on one GPU (codes decoded in
   * registers for the bf16 tensor cores), refused under GPU tensor or expert parallelism; on the
   * CPU always (a dequantizing reference).
   */
  static FeatureCheck quantizedWeights(
      String f, String format, GpuFacts g, DoctorTarget t, FeatureCheck kernels) {
    return cpuAndOneGpu(
        f,
        g,
        t,
        kernels,
        format + " checkpoints run on the CPU (no usable GPU)",
        "",
        format
            + " weights are refused under GPU tensor/expert parallelism; they run on one GPU"
            + " (--tp-size 1 --ep-size 1) or on the CPU",
        format + " checkpoints run on one GPU (weight-only kernels) and on the CPU");
  }

  static FeatureCheck fp8(GpuFacts g) {
    return tensorCores(
        "fp8-tensor-cores",
        g,
        89,
        " has no FP8 tensor cores (sm_89 and newer)",
        " has FP8 tensor cores; this build's FP8 kernels decode e4m3 weights to bf16 for the bf16"
            + " tensor cores (fp8-weights) and have no e4m3 MMA path");
  }

  static FeatureCheck fp4(GpuFacts g) {
    return tensorCores(
        "fp4-tensor-cores",
        g,
        100,
        " has no FP4 tensor cores (sm_100 and newer)",
        " has FP4 tensor cores; this build's NVFP4 kernels decode e2m1 weights to bf16 for the bf16"
            + " tensor cores (nvfp4-weights) and have no block-scaled FP4 MMA path");
  }

  /**
   * A tensor-core format the hardware has from compute capability {@code minCc} on and this build
   * does not use: unsupported by the hardware below it, by the software from it.
   */
  private static FeatureCheck tensorCores(
      String f, GpuFacts g, int minCc, String missing, String unused) {
    if (!g.available()) {
      return FeatureCheck.hardware(f, "no usable GPU");
    }
    GpuFacts.Gpu o = oldest(g);
    if (o.cc() < minCc) {
      return FeatureCheck.hardware(f, o.arch() + missing);
    }
    return FeatureCheck.software(f, o.arch() + unused);
  }

  /**
   * DeepSeek Sparse Attention (the lightning indexer, top-k, sparse MLA): kernels on the CPU (every
   * rank layout) and on one GPU; GPU tensor or expert parallelism refuses these models.
   */
  static FeatureCheck sparseAttention(
      GpuFacts g, DoctorTarget t, FeatureCheck kernels, ModelNeeds m) {
    return cpuAndOneGpu(
        "sparse-attention",
        g,
        t,
        kernels,
        "CPU kernels, every rank layout (no usable GPU)",
        m != null && m.sparseAttention() ? "this model's DSA indexer: " : "",
        "GPU tensor/expert parallelism refuses sparse-attention models; one GPU"
            + " (--tp-size 1 --ep-size 1) or CPU ranks run them",
        "indexer, top-k and sparse MLA kernels on one GPU (tensor cores) and the CPU");
  }

  /**
   * A path with CPU kernels and kernels for one GPU, which GPU tensor or expert parallelism
   * refuses: ok without a GPU ({@code onCpu}), the GPU kernels' own verdict where they do not run
   * here, a software refusal for {@code t}'s parallel layout, else ok ({@code onGpu}); each reason
   * after {@code prefix} (the model's part in it, or empty).
   */
  private static FeatureCheck cpuAndOneGpu(
      String f,
      GpuFacts g,
      DoctorTarget t,
      FeatureCheck kernels,
      String onCpu,
      String prefix,
      String refused,
      String onGpu) {
    if (!g.available()) {
      return FeatureCheck.ok(f, prefix + onCpu);
    }
    if (kernels.verdict() != Verdict.OK) {
      return new FeatureCheck(f, kernels.verdict(), prefix + "on the GPU: " + kernels.reason());
    }
    if (t.tpSize() > 1 || t.epSize() > 1) {
      return FeatureCheck.software(f, prefix + refused);
    }
    return FeatureCheck.ok(f, prefix + onGpu);
  }

  static FeatureCheck multiNodeGpu(GpuFacts g) {
    String f = "multi-node-gpu";
    if (g.ncclVersion() == null) {
      return FeatureCheck.software(f, libraryProblem(g, "NCCL", "NCCL cannot be loaded"));
    }
    return FeatureCheck.untested(
        f,
        "NCCL "
            + g.ncclVersion()
            + " between nodes (unique id over --dist-init-addr); one host cannot check the"
            + " network to the others");
  }

  private static String libraryProblem(GpuFacts g, String name, String fallback) {
    return g.libraries().stream()
        .filter(l -> l.name().equals(name) && !l.loaded())
        .map(GpuFacts.Library::problem)
        .findFirst()
        .orElse(g.available() ? fallback : "no usable GPU (see cuda-device)");
  }

  /** The GPU of lowest compute capability (the one every rank must be able to run). */
  static GpuFacts.Gpu oldest(GpuFacts g) {
    GpuFacts.Gpu o = g.gpus().getFirst();
    for (GpuFacts.Gpu x : g.gpus()) {
      if (x.cc() < o.cc()) {
        o = x;
      }
    }
    return o;
  }

  /** The least free memory among the first {@code n} GPUs, -1 when unknown. */
  static long minFree(GpuFacts g, int n) {
    long min = Long.MAX_VALUE;
    for (int i = 0; i < Math.min(n, g.gpus().size()); i++) {
      long free = g.gpus().get(i).freeBytes();
      if (free < 0) {
        return -1;
      }
      min = Math.min(min, free);
    }
    return min == Long.MAX_VALUE ? -1 : min;
  }

  /** 13000 as "13.0". */
  static String cudaVersion(int v) {
    return v <= 0 ? "unknown" : v / 1000 + "." + v % 1000 / 10;
  }

  /** nvcc's "13.0" as the driver's 13000. */
  static int nvccAsCuda(String nvcc) {
    try {
      String[] p = nvcc.split("\\.");
      return Integer.parseInt(p[0]) * 1000 + (p.length > 1 ? Integer.parseInt(p[1]) * 10 : 0);
    } catch (RuntimeException e) {
      return 0;
    }
  }
}
