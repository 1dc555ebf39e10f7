package dev.ringmaster.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.DoubleNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.math.BigDecimal;
import java.math.MathContext;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.util.concurrent.TimeUnit;

/**
 * Appends benchmark results to the history file (one JSON object per line): when, on what machine,
 * at which commit, with which command, the figures, and what they are compared with.
 */
final class BenchmarkHistory {
  private BenchmarkHistory() {}

  static void append(
      Path file, String benchmark, String command, JsonNode results, String reference)
      throws IOException {
    append(file, benchmark, command, results, reference, java.util.Map.of());
  }

  /**
   * As above, with {@code machineExtras} added to the machine object (for GPU runs: the GPUs and
   * their links, the NCCL version; see {@link GpuMachine}).
   */
  static void append(
      Path file,
      String benchmark,
      String command,
      JsonNode results,
      String reference,
      java.util.Map<String, String> machineExtras)
      throws IOException {
    ObjectMapper m = new ObjectMapper();
    ObjectNode o = m.createObjectNode();
    o.put("time", Instant.now().toString());
    o.put("benchmark", benchmark);
    o.put("command", command);
    o.put("commit", git("rev-parse", "--short", "HEAD"));
    ObjectNode machine = o.putObject("machine");
    machine.put("os", System.getProperty("os.name") + " " + System.getProperty("os.arch"));
    machine.put("cpu", cpuModel());
    machine.put("cores", Runtime.getRuntime().availableProcessors());
    machine.put("java", System.getProperty("java.version"));
    String load = loadAverage();
    if (load != null) {
      // other processes on the host disturb CPU figures: say how busy it was
      machine.put("load_average", load);
    }
    machineExtras.forEach(machine::put);
    o.put("reference", reference);
    o.set("results", rounded(results));
    Files.createDirectories(file.toAbsolutePath().getParent());
    Files.writeString(
        file,
        m.writeValueAsString(o) + "\n",
        StandardCharsets.UTF_8,
        StandardOpenOption.CREATE,
        StandardOpenOption.APPEND);
  }

  /** Significant digits kept of a measured figure (timers and clocks give no more). */
  static final int SIGNIFICANT_DIGITS = 5;

  /**
   * A copy of {@code node} with every floating-point number rounded to {@link #SIGNIFICANT_DIGITS}:
   * the history is kept in the repository, and 15-digit timings made most of its size.
   */
  static JsonNode rounded(JsonNode node) {
    if (node.isFloatingPointNumber()) {
      double v = node.doubleValue();
      if (v == 0 || !Double.isFinite(v)) {
        return node;
      }
      return DoubleNode.valueOf(
          new BigDecimal(v).round(new MathContext(SIGNIFICANT_DIGITS)).doubleValue());
    }
    if (node.isObject()) {
      ObjectNode copy = JsonNodeFactory.instance.objectNode();
      node.properties().forEach(e -> copy.set(e.getKey(), rounded(e.getValue())));
      return copy;
    }
    if (node.isArray()) {
      ArrayNode copy = JsonNodeFactory.instance.arrayNode();
      node.forEach(e -> copy.add(rounded(e)));
      return copy;
    }
    return node;
  }

  private static String cpuModel() {
    try {
      for (String line : Files.readAllLines(Path.of("/proc/cpuinfo"))) {
        if (line.startsWith("model name")) {
          return line.substring(line.indexOf(':') + 1).strip();
        }
      }
    } catch (IOException | RuntimeException e) {
      // not Linux: fall through
    }
    return System.getProperty("os.arch");
  }

  /** The 1, 5 and 15 minute load averages as the kernel reports them, or null off Linux. */
  private static String loadAverage() {
    try {
      String[] f = Files.readString(Path.of("/proc/loadavg")).strip().split("\\s+");
      return f.length >= 3 ? f[0] + " " + f[1] + " " + f[2] : null;
    } catch (IOException | RuntimeException e) {
      return null;
    }
  }

  private static String git(String... args) {
    try {
      String[] cmd = new String[args.length + 1];
      cmd[0] = "git";
      System.arraycopy(args, 0, cmd, 1, args.length);
      Process p =
          new ProcessBuilder(cmd)
              .directory(DefaultModel.home().toFile())
              .redirectErrorStream(true)
              .start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
      return p.waitFor(5, TimeUnit.SECONDS) && p.exitValue() == 0 ? out : "unknown";
    } catch (IOException | InterruptedException e) {
      return "unknown";
    }
  }
}
