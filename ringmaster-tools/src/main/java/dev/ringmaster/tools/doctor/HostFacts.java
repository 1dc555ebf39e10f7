package dev.ringmaster.tools.doctor;

import dev.ringmaster.backend.cpu.CpuKernelContext;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The CPU side of this host, which {@code doctor} reports with or without a GPU.
 *
 * @param os operating system name and version
 * @param arch CPU architecture ({@code amd64}, {@code aarch64})
 * @param cpuModel the CPU's model name ({@code /proc/cpuinfo}), or "unknown"
 * @param cores processors this JVM may use
 * @param vectorBits the widest float vector the JIT compiles to SIMD instructions
 * @param memoryTotalBytes host memory ({@code MemTotal}), 0 when unknown
 * @param memoryAvailableBytes memory available to new work ({@code MemAvailable}), 0 when unknown
 * @param maxHeapBytes the Java heap limit (the CPU engine's KV cache lives on the heap)
 * @param numaNodes the CPU list of each NUMA node, by node ({@code /sys/devices/system/node})
 * @param javaVersion the running Java's version
 * @param javaVendor the running Java's vendor
 */
public record HostFacts(
    String os,
    String arch,
    String cpuModel,
    int cores,
    int vectorBits,
    long memoryTotalBytes,
    long memoryAvailableBytes,
    long maxHeapBytes,
    List<String> numaNodes,
    String javaVersion,
    String javaVendor) {

  /** Copies the list. */
  public HostFacts {
    numaNodes = List.copyOf(numaNodes);
  }

  /** Reads this host's facts; parts that cannot be read come back as "unknown" or 0. */
  public static HostFacts probe() {
    String model = "unknown";
    for (String line : lines(Path.of("/proc/cpuinfo"))) {
      if (line.startsWith("model name") && line.contains(":")) {
        model = line.substring(line.indexOf(':') + 1).strip();
        break;
      }
    }
    long total = 0;
    long available = 0;
    for (String line : lines(Path.of("/proc/meminfo"))) {
      if (line.startsWith("MemTotal:")) {
        total = kib(line);
      } else if (line.startsWith("MemAvailable:")) {
        available = kib(line);
      }
    }
    return new HostFacts(
        System.getProperty("os.name") + " " + System.getProperty("os.version"),
        System.getProperty("os.arch"),
        model,
        Runtime.getRuntime().availableProcessors(),
        CpuKernelContext.preferredVectorBits(),
        total,
        available,
        Runtime.getRuntime().maxMemory(),
        numaNodes(Path.of("/sys/devices/system/node")),
        Runtime.version().toString(),
        System.getProperty("java.vendor"));
  }

  private static List<String> lines(Path p) {
    try {
      return Files.readAllLines(p);
    } catch (IOException | RuntimeException e) {
      return List.of();
    }
  }

  private static long kib(String meminfoLine) {
    String[] parts = meminfoLine.trim().split("\\s+");
    try {
      return Long.parseLong(parts[1]) * 1024;
    } catch (RuntimeException e) {
      return 0;
    }
  }

  /** {@code nodeN: cpulist} per NUMA node, in node order. */
  static List<String> numaNodes(Path sysNodes) {
    List<Path> nodes = new ArrayList<>();
    try (DirectoryStream<Path> ds = Files.newDirectoryStream(sysNodes, "node[0-9]*")) {
      ds.forEach(nodes::add);
    } catch (IOException | RuntimeException e) {
      return List.of();
    }
    nodes.sort(
        (a, b) ->
            Integer.compare(
                Integer.parseInt(a.getFileName().toString().substring(4)),
                Integer.parseInt(b.getFileName().toString().substring(4))));
    List<String> out = new ArrayList<>();
    for (Path n : nodes) {
      List<String> cpus = lines(n.resolve("cpulist"));
      out.add(n.getFileName() + ": cpus " + (cpus.isEmpty() ? "?" : cpus.getFirst().strip()));
    }
    return out;
  }

  /** Bytes as GiB with one decimal, or as MiB below 1 GiB. */
  static String gib(double bytes) {
    if (bytes < (1L << 30)) {
      return String.format(Locale.ROOT, "%.1f MiB", bytes / (1L << 20));
    }
    return String.format(Locale.ROOT, "%.1f GiB", bytes / (1L << 30));
  }
}
