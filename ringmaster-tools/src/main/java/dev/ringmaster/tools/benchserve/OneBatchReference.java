package dev.ringmaster.tools.benchserve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * One batch size of a {@code bench one-batch --json} result, the engine's own speed to hold a
 * served run against ({@code --compare-one-batch}). Two shares come out: served output throughput
 * over one-batch decode throughput (decode steps only, the prefill left out, so no server reaches
 * it: every served request also prefills), and over one-batch "total" output throughput (the
 * prefill plus the request's decode steps, what a server running the same batch from prefill to
 * last token can deliver at most).
 *
 * @param file the file it was read from
 * @param batchSize the batch size compared with (the run's {@code --max-concurrency})
 * @param inputLen the one-batch prompt tokens
 * @param outputLen the one-batch output tokens
 * @param decodeTokensPerS one-batch decode throughput (batch / median step)
 * @param totalOutputTokensPerS one-batch output throughput over prefill plus decode
 */
public record OneBatchReference(
    Path file,
    int batchSize,
    int inputLen,
    int outputLen,
    double decodeTokensPerS,
    double totalOutputTokensPerS) {
  private static final String FLAG = "--compare-one-batch";

  /**
   * Reads the entry for {@code batchSize} from a {@code bench one-batch --json} file (or a
   * benchmark history line holding one).
   *
   * @param batchSize the run's {@code --max-concurrency}, null when it has none
   * @throws BenchServeException naming the file and what is wrong with it
   */
  public static OneBatchReference read(Path file, Integer batchSize) {
    if (batchSize == null) {
      throw new BenchServeException(
          FLAG + " needs --max-concurrency: the one-batch batch size to compare with");
    }
    JsonNode root;
    try {
      root = RequestBodies.JSON.readTree(Files.readString(file));
    } catch (IOException e) {
      throw new BenchServeException(
          FLAG + " " + file + ": cannot read it as JSON (" + e.getMessage() + ")", e);
    }
    JsonNode results = root == null ? null : root.path("results");
    if (results != null && results.isObject()) {
      results = results.path("results"); // a benchmark history record wraps the run
    }
    if (results == null || !results.isArray()) {
      throw new BenchServeException(
          FLAG + " " + file + ": not the output of bench one-batch --json (no 'results' list)");
    }
    List<Integer> sizes = new ArrayList<>();
    for (JsonNode r : results) {
      int b = r.path("batch_size").asInt(-1);
      sizes.add(b);
      if (b != batchSize) {
        continue;
      }
      double total = r.path("total_output_tokens_per_s").asDouble(0);
      if (total <= 0) {
        throw new BenchServeException(
            FLAG
                + " "
                + file
                + ": batch "
                + b
                + " has no total_output_tokens_per_s (the file predates it); run bench one-batch"
                + " --json again");
      }
      return new OneBatchReference(
          file,
          b,
          r.path("input_len").asInt(),
          r.path("output_len").asInt(),
          r.path("decode_tokens_per_s").asDouble(),
          total);
    }
    throw new BenchServeException(
        FLAG
            + " "
            + file
            + ": no batch size "
            + batchSize
            + " (it has "
            + sizes
            + "); run bench one-batch --batch-size "
            + batchSize
            + " or pass the --max-concurrency it has");
  }

  /** Served output throughput as a share of the one-batch decode throughput. */
  public double decodeShare(double servedTokensPerS) {
    return servedTokensPerS / decodeTokensPerS;
  }

  /** Served output throughput as a share of the one-batch total (prefill plus decode). */
  public double e2eShare(double servedTokensPerS) {
    return servedTokensPerS / totalOutputTokensPerS;
  }

  /**
   * Whether the run's requests have the one-batch prompt and output lengths: fixed-length random
   * datasets ({@code --random-range-ratio 1}) of the same lengths. Other runs are still compared,
   * with a note.
   */
  public boolean lengthsMatch(BenchServeConfig.Dataset d) {
    boolean random = d.name().equals("random") || d.name().equals("random-ids");
    return random
        && d.randomRangeRatio() == 1.0
        && d.randomInputLen() == inputLen
        && d.randomOutputLen() == outputLen;
  }

  /** The comparison's section, printed under the summary table. */
  public String table(double servedTokensPerS, BenchServeConfig.Dataset d) {
    StringBuilder sb = new StringBuilder();
    sb.append(ResultReport.centered("Share of bench one-batch", '-')).append('\n');
    row(sb, "One-batch batch size:", Integer.toString(batchSize));
    row(sb, "One-batch decode tok/s:", num(decodeTokensPerS));
    row(sb, "One-batch total output tok/s:", num(totalOutputTokensPerS));
    row(sb, "Output tok/s / one-batch decode (%):", num(100 * decodeShare(servedTokensPerS)));
    row(sb, "Output tok/s / one-batch total (%):", num(100 * e2eShare(servedTokensPerS)));
    if (!lengthsMatch(d)) {
      sb.append(
          String.format(
              Locale.ROOT,
              "note: one-batch ran %d-token prompts and %d output tokens; this run's requests"
                  + " differ (compare with --dataset-name random-ids --random-input-len %d"
                  + " --random-output-len %d --random-range-ratio 1)%n",
              inputLen,
              outputLen,
              inputLen,
              outputLen));
    }
    sb.append("=".repeat(50)).append('\n');
    return sb.toString();
  }

  /** The comparison as the JSON line's {@code one_batch_comparison} object. */
  public ObjectNode json(double servedTokensPerS, BenchServeConfig.Dataset d) {
    ObjectNode o = RequestBodies.JSON.createObjectNode();
    o.put("file", file.toString());
    o.put("batch_size", batchSize);
    o.put("input_len", inputLen);
    o.put("output_len", outputLen);
    o.put("decode_tokens_per_s", decodeTokensPerS);
    o.put("total_output_tokens_per_s", totalOutputTokensPerS);
    o.put("decode_share", decodeShare(servedTokensPerS));
    o.put("e2e_share", e2eShare(servedTokensPerS));
    o.put("lengths_match", lengthsMatch(d));
    return o;
  }

  private static String num(double v) {
    return String.format(Locale.ROOT, "%.2f", v);
  }

  private static void row(StringBuilder sb, String name, String value) {
    sb.append(String.format(Locale.ROOT, "%-40s %-10s\n", name, value));
  }
}
