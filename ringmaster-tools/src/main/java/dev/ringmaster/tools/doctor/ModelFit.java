package dev.ringmaster.tools.doctor;

import static dev.ringmaster.tools.doctor.HostFacts.gib;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** The {@code --model} checks: can this host run the model, and does it fit in memory. */
final class ModelFit {
  /** The CPU engine's default KV share of the free heap ({@code serve --mem-fraction-static}). */
  static final double CPU_KV_FRACTION = 0.5;

  private ModelFit() {}

  static List<FeatureCheck> check(HostFacts host, GpuFacts gpu, DoctorTarget target, ModelNeeds m) {
    List<FeatureCheck> out = new ArrayList<>();
    String arch = m.modelType() + (m.mla() ? " (MLA)" : " (grouped-query attention)");
    if (!gpu.available()) {
      out.add(FeatureCheck.ok("model-architecture", arch + " runs on the CPU engine"));
    } else if (m.mla()) {
      out.add(FeatureCheck.ok("model-architecture", arch + " runs on the CPU and CUDA backends"));
    } else {
      out.add(
          FeatureCheck.software(
              "model-architecture",
              arch + " runs on the CPU only; the CUDA backend runs MLA models"));
    }
    if (gpu.available() && m.mla()) {
      out.add(gpuMemory(gpu, target, m));
    }
    out.add(cpuMemory(host, m));
    return out;
  }

  static FeatureCheck gpuMemory(GpuFacts gpu, DoctorTarget t, ModelNeeds m) {
    String f = "model-gpu-memory";
    int n = t.worldSize();
    if (gpu.gpus().size() < n) {
      return FeatureCheck.hardware(
          f,
          "--tp-size/--ep-size " + n + " needs " + n + " GPUs; this host has " + gpu.gpus().size());
    }
    GpuFacts.Gpu g = gpu.gpus().getFirst();
    long free = Doctor.minFree(gpu, n);
    double budget =
        t.memFractionStatic() > 0
            ? Math.min(t.memFractionStatic() * g.totalBytes(), free >= 0 ? free : Double.MAX_VALUE)
            : free >= 0 ? free : g.totalBytes();
    String what =
        t.memFractionStatic() > 0
            ? String.format(
                Locale.ROOT,
                "--mem-fraction-static %.2f of %s",
                t.memFractionStatic(),
                gib(g.totalBytes()))
            : gib(budget) + " free";
    double kv = m.gpuKvBytesPerToken() * m.contextLength();
    String parts =
        String.format(
            Locale.ROOT,
            "weights %s + prefill workspace %s + %d graphs %s%s + KV %s at %d tokens = %s",
            gib(m.gpuWeightsBytes()),
            gib(m.gpuActivationsBytes()),
            m.gpuGraphCount(),
            gib(m.gpuGraphBytes()),
            m.a2aBytes() > 0 ? " + all-to-all " + gib(m.a2aBytes()) : "",
            gib(kv),
            m.contextLength(),
            gib(m.gpuBytes()));
    if (m.gpuWeightsBytes() > budget) {
      return FeatureCheck.hardware(
          f,
          "weights " + gib(m.gpuWeightsBytes()) + " per GPU exceed " + what + ": raise --tp-size");
    }
    if (m.gpuBytes() > budget) {
      return FeatureCheck.hardware(
          f,
          parts
              + " exceed "
              + what
              + ": lower --context-length, --cuda-graph-max-bs or --chunked-prefill-size");
    }
    long sequences = (long) ((budget - (m.gpuBytes() - kv)) / Math.max(kv, 1));
    return FeatureCheck.ok(
        f, parts + " fit in " + what + " (" + sequences + " sequences at that length)");
  }

  static FeatureCheck cpuMemory(HostFacts host, ModelNeeds m) {
    String f = "model-cpu-memory";
    double kv = m.cpuKvBytesPerToken() * m.contextLength();
    double heap = host.maxHeapBytes() * CPU_KV_FRACTION;
    String parts =
        "weight files "
            + gib(m.cpuWeightFileBytes())
            + " (memory-mapped) + KV "
            + gib(kv)
            + " at "
            + m.contextLength()
            + " tokens (f32, Java heap)";
    if (host.memoryAvailableBytes() > 0 && m.cpuWeightFileBytes() > host.memoryAvailableBytes()) {
      return FeatureCheck.hardware(
          f,
          parts
              + ": the weights exceed the "
              + gib(host.memoryAvailableBytes())
              + " of host memory available");
    }
    if (kv > heap) {
      return FeatureCheck.hardware(
          f,
          parts
              + ": the KV exceeds half the "
              + gib(host.maxHeapBytes())
              + " heap; raise -Xmx or lower --context-length");
    }
    return FeatureCheck.ok(f, parts + " fit (heap " + gib(host.maxHeapBytes()) + ")");
  }
}
