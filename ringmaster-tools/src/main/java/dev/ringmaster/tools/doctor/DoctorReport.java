package dev.ringmaster.tools.doctor;

import static dev.ringmaster.tools.doctor.HostFacts.gib;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * What {@code doctor} prints: the host, the GPUs, the model's needs and the verdicts, as text or
 * JSON (snake_case), and the exit status scripts test.
 *
 * @param host the CPU side
 * @param gpu the GPU side
 * @param model the model's needs, or null without {@code --model}
 * @param checks the verdicts
 * @param measured lines about what {@code --measure} ran and wrote, empty without it
 */
public record DoctorReport(
    HostFacts host,
    GpuFacts gpu,
    ModelNeeds model,
    List<FeatureCheck> checks,
    List<String> measured) {

  private static final ObjectMapper JSON =
      new ObjectMapper()
          .setPropertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
          .enable(SerializationFeature.INDENT_OUTPUT);

  /** Copies the lists. */
  public DoctorReport {
    checks = List.copyOf(checks);
    measured = List.copyOf(measured);
  }

  /**
   * The checks that make the exit status 1: the {@code required} features that are not {@code ok},
   * and with a model every model check that is not {@code ok}. An unknown required name is refused.
   */
  public List<FeatureCheck> failures(List<String> required) {
    List<FeatureCheck> out = new ArrayList<>();
    for (String r : required) {
      FeatureCheck c =
          checks.stream()
              .filter(x -> x.feature().equals(r))
              .findFirst()
              .orElseThrow(
                  () ->
                      new IllegalArgumentException(
                          "--require: no feature '"
                              + r
                              + "'; features: "
                              + checks.stream().map(FeatureCheck::feature).toList()));
      if (c.verdict() != Verdict.OK) {
        out.add(c);
      }
    }
    for (FeatureCheck c : checks) {
      if (c.feature().startsWith("model-") && c.verdict() != Verdict.OK && !out.contains(c)) {
        out.add(c);
      }
    }
    return out;
  }

  /** The report as JSON. */
  public String toJson(List<String> required) {
    var node = JSON.valueToTree(this);
    ((com.fasterxml.jackson.databind.node.ObjectNode) node)
        .putPOJO("failed", failures(required).stream().map(FeatureCheck::feature).toList());
    try {
      return JSON.writeValueAsString(node);
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The report as text for a terminal. */
  public String text() {
    StringBuilder sb = new StringBuilder();
    sb.append("Host\n");
    line(sb, "os", host.os() + " " + host.arch());
    line(
        sb,
        "cpu",
        host.cpuModel()
            + ", "
            + host.cores()
            + " cores, "
            + host.vectorBits()
            + "-bit float vectors");
    line(
        sb,
        "memory",
        gib(host.memoryTotalBytes())
            + " total, "
            + gib(host.memoryAvailableBytes())
            + " available, Java heap "
            + gib(host.maxHeapBytes()));
    line(sb, "numa", host.numaNodes().isEmpty() ? "unknown" : String.join("; ", host.numaNodes()));
    line(sb, "java", host.javaVersion() + " (" + host.javaVendor() + ")");
    sb.append("\nGPUs\n");
    if (!gpu.available()) {
      line(sb, "none", gpu.problem().isEmpty() ? "the driver reports no GPU" : gpu.problem());
    } else {
      line(
          sb,
          "driver",
          gpu.driverVersion() + " (CUDA " + Doctor.cudaVersion(gpu.cudaDriverVersion()) + ")");
      for (GpuFacts.Gpu g : gpu.gpus()) {
        line(
            sb,
            "GPU" + g.index(),
            String.format(
                Locale.ROOT,
                "%s, %s, %d SMs, %s (%s free), SM %s / memory %s, %s, NUMA node %s%s, %d NVLinks up",
                g.name(),
                g.arch(),
                g.multiprocessors(),
                gib(g.totalBytes()),
                g.freeBytes() < 0 ? "?" : gib(g.freeBytes()),
                g.smClockMhz() > 0 ? g.smClockMhz() + " MHz" : "?",
                g.memoryClockMhz() > 0 ? g.memoryClockMhz() + " MHz" : "?",
                g.busId(),
                g.numaNode() < 0 ? "?" : Integer.toString(g.numaNode()),
                g.localCpus().isEmpty() ? "" : " (cpus " + g.localCpus() + ")",
                g.nvlinksUp()));
      }
      if (gpu.topology() != null) {
        sb.append(gpu.topology().matrix().indent(2));
        for (int i = 0; i < gpu.gpus().size(); i++) {
          for (int j = 0; j < gpu.gpus().size(); j++) {
            if (i != j) {
              line(
                  sb,
                  "peer copy",
                  "GPU" + j + " -> GPU" + i + ": " + gpu.topology().peerCopy().get(i).get(j));
            }
          }
        }
      }
    }
    line(
        sb,
        "kernels",
        "nvcc "
            + gpu.kernelsNvcc()
            + (gpu.kernelTargets().isEmpty()
                ? ""
                : ", targets " + String.join(" ", gpu.kernelTargets())));
    for (GpuFacts.Library l : gpu.libraries()) {
      line(
          sb,
          l.name(),
          l.loaded()
              ? (l.version().isEmpty() ? "" : l.version() + " ") + "at " + l.source()
              : "not found: " + l.problem());
    }
    for (GpuFacts.MeasuredTable t : gpu.measuredTables()) {
      line(sb, "allreduce", "measured table for " + t.worldSize() + " GPUs: " + t.table());
    }
    if (model != null) {
      sb.append("\nModel ").append(model.model()).append('\n');
      line(
          sb,
          "type",
          model.modelType()
              + (model.mla() ? ", MLA" : ", GQA")
              + ", "
              + model.parameters() / 1_000_000
              + "M parameters");
      line(
          sb,
          "gpu",
          String.format(
              Locale.ROOT,
              "weights %s, workspace %s, %d graphs %s, all-to-all %s, KV %.1f KiB/token",
              gib(model.gpuWeightsBytes()),
              gib(model.gpuActivationsBytes()),
              model.gpuGraphCount(),
              gib(model.gpuGraphBytes()),
              gib(model.a2aBytes()),
              model.gpuKvBytesPerToken() / 1024));
      line(
          sb,
          "cpu",
          String.format(
              Locale.ROOT,
              "weight files %s, KV %.1f KiB/token (f32)",
              gib(model.cpuWeightFileBytes()),
              model.cpuKvBytesPerToken() / 1024));
    }
    if (!measured.isEmpty()) {
      sb.append("\nMeasured\n");
      measured.forEach(m -> sb.append("  ").append(m).append('\n'));
    }
    sb.append("\nFeatures\n");
    int w = checks.stream().mapToInt(c -> c.feature().length()).max().orElse(10);
    for (FeatureCheck c : checks) {
      sb.append(
          String.format(
              Locale.ROOT,
              "  %-" + w + "s  %-30s %s%n",
              c.feature(),
              c.verdict().label(),
              c.reason()));
    }
    return sb.toString();
  }

  private static void line(StringBuilder sb, String key, String value) {
    sb.append(String.format(Locale.ROOT, "  %-10s %s%n", key, value));
  }
}
