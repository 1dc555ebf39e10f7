package dev.ringmaster.sim.report;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Decode scaling across GPU counts from {@code bench one-batch --json} files (one per parallel
 * layout): a table of every run and, per model and batch size, the best decode tok/s at each GPU
 * count with its speed-up over one GPU, drawn as grouped bars.
 */
public final class DecodeScaling {
  private static final ObjectMapper JSON = new ObjectMapper();

  private DecodeScaling() {}

  /**
   * One batch size of a run.
   *
   * @param batch sequences
   * @param decodeMs median decode step
   * @param decodeTokensPerS decode tokens per second, all sequences
   */
  public record Point(int batch, double decodeMs, double decodeTokensPerS) {}

  /**
   * One {@code bench one-batch} run.
   *
   * @param model the model as the run names it (a directory or a description)
   * @param tp tensor-parallel size (GPUs)
   * @param ep expert-parallel size
   * @param allreduce the allreduce choice, or null
   * @param a2a the MoE backend under expert parallelism, or null where the file does not say
   * @param points one per batch size
   */
  public record Run(
      String model, int tp, int ep, String allreduce, String a2a, List<Point> points) {

    /** How the run split the model: {@code TP 1}, {@code TP 4 nccl}, {@code EP 4 all-to-all}. */
    public String layout() {
      if (tp <= 1) {
        return "TP 1";
      }
      if (ep > 1) {
        return "EP " + ep + (a2a == null ? "" : " " + a2a);
      }
      return "TP " + tp + (allreduce == null ? "" : " " + allreduce);
    }

    /** The model's name without a directory or a parenthesised remark. */
    public String modelName() {
      String m = model == null ? "model" : model;
      int paren = m.indexOf(" (");
      if (paren > 0) {
        return m.substring(0, paren);
      }
      int slash = m.lastIndexOf('/');
      return slash >= 0 && slash < m.length() - 1 ? m.substring(slash + 1) : m;
    }
  }

  /** Reads a {@code bench one-batch --json} file. */
  public static Run read(Path file) throws IOException {
    JsonNode root = JSON.readTree(Files.readString(file));
    if (root == null || !root.has("results") || !root.get("results").isArray()) {
      throw new IllegalArgumentException(file + ": not bench one-batch JSON (no results array)");
    }
    List<Point> points = new ArrayList<>();
    for (JsonNode r : root.get("results")) {
      points.add(
          new Point(
              r.path("batch_size").asInt(),
              r.path("decode_median_ms").asDouble(),
              r.path("decode_tokens_per_s").asDouble()));
    }
    return new Run(
        root.path("model").asText(null),
        Math.max(1, root.path("tp_size").asInt(1)),
        Math.max(1, root.path("ep_size").asInt(1)),
        root.hasNonNull("allreduce") ? root.get("allreduce").asText() : null,
        root.hasNonNull("moe_a2a_backend") ? root.get("moe_a2a_backend").asText() : null,
        points);
  }

  /** Best decode tok/s per model, batch size and GPU count (model -> batch -> GPUs -> tok/s). */
  public static Map<String, Map<Integer, NavigableMap<Integer, Double>>> best(List<Run> runs) {
    Map<String, Map<Integer, NavigableMap<Integer, Double>>> out = new TreeMap<>();
    for (Run r : runs) {
      for (Point p : r.points()) {
        out.computeIfAbsent(r.modelName(), k -> new TreeMap<>())
            .computeIfAbsent(p.batch(), k -> new TreeMap<>())
            .merge(r.tp(), p.decodeTokensPerS(), Math::max);
      }
    }
    return out;
  }

  /** Markdown: every run, then the best per GPU count with the speed-up over one GPU. */
  public static String table(List<Run> runs) {
    TreeSet<Integer> batches = new TreeSet<>();
    runs.forEach(r -> r.points().forEach(p -> batches.add(p.batch())));
    StringBuilder sb = new StringBuilder("| model | run |");
    batches.forEach(b -> sb.append(" batch ").append(b).append(" |"));
    sb.append("\n| --- | --- |");
    batches.forEach(b -> sb.append(" ---: |"));
    sb.append('\n');
    List<Run> sorted = new ArrayList<>(runs);
    sorted.sort(
        java.util.Comparator.comparing(Run::modelName)
            .thenComparingInt(Run::tp)
            .thenComparing(Run::layout));
    for (Run r : sorted) {
      sb.append("| ").append(r.modelName()).append(" | ").append(r.layout()).append(" |");
      for (int b : batches) {
        Point p = r.points().stream().filter(x -> x.batch() == b).findFirst().orElse(null);
        sb.append(
            p == null
                ? " |"
                : String.format(
                    Locale.ROOT, " %.2f ms (%.0f tok/s) |", p.decodeMs(), p.decodeTokensPerS()));
      }
      sb.append('\n');
    }
    sb.append(
        "\n| model | batch | GPUs: best decode tok/s (speed-up over 1 GPU) |\n| --- | ---: | --- |\n");
    best(runs)
        .forEach(
            (model, byBatch) ->
                byBatch.forEach(
                    (batch, byGpus) -> {
                      Double one = byGpus.get(1);
                      List<String> cells = new ArrayList<>();
                      byGpus.forEach(
                          (gpus, tps) ->
                              cells.add(
                                  String.format(
                                      Locale.ROOT,
                                      "%d: %.0f%s",
                                      gpus,
                                      tps,
                                      one == null
                                          ? ""
                                          : String.format(Locale.ROOT, " (%.2fx)", tps / one))));
                      sb.append("| ")
                          .append(model)
                          .append(" | ")
                          .append(batch)
                          .append(" | ")
                          .append(String.join(", ", cells))
                          .append(" |\n");
                    }));
    return sb.toString();
  }

  /**
   * Writes the speed-up of the best layout at each GPU count over the fewest GPUs measured (one GPU
   * where measured), as grouped bars: one bar per model and batch size at each GPU count.
   */
  public static void plot(List<Run> runs, Path png) throws IOException {
    Map<String, Map<Integer, NavigableMap<Integer, Double>>> best = best(runs);
    if (best.isEmpty()) {
      throw new IllegalArgumentException("no runs to plot");
    }
    TreeSet<Integer> gpus = new TreeSet<>();
    best.values().forEach(byBatch -> byBatch.values().forEach(m -> gpus.addAll(m.keySet())));
    List<String> categories = new ArrayList<>();
    gpus.forEach(n -> categories.add(n + (n == 1 ? " GPU" : " GPUs")));
    Map<String, List<Double>> series = new java.util.LinkedHashMap<>();
    best.forEach(
        (model, byBatch) ->
            byBatch.forEach(
                (batch, byGpus) -> {
                  double base = byGpus.firstEntry().getValue();
                  List<Double> v = new ArrayList<>();
                  gpus.forEach(n -> v.add(byGpus.containsKey(n) ? byGpus.get(n) / base : 0.0));
                  series.put(model + ", batch " + batch, v);
                }));
    BarChartPng.write(
        png,
        "Decode speed-up over the fewest GPUs (best layout at each count)",
        "tensor-parallel size",
        "decode tok/s / tok/s on the fewest GPUs",
        categories,
        series,
        false);
  }
}
