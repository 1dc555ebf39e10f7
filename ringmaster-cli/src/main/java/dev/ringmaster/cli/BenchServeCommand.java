package dev.ringmaster.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ringmaster.tools.benchserve.Backend;
import dev.ringmaster.tools.benchserve.BenchServe;
import dev.ringmaster.tools.benchserve.BenchServeConfig;
import dev.ringmaster.tools.benchserve.BenchServeException;
import dev.ringmaster.tools.benchserve.BenchServeResult;
import dev.ringmaster.tools.benchserve.LatencyPlot;
import dev.ringmaster.tools.benchserve.OneBatchReference;
import dev.ringmaster.tools.benchserve.ResultReport;
import dev.ringmaster.util.PngSupport;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code ringmaster bench serve}: online serving throughput and latency against a running server,
 * with the flags, summary table and JSON result line of {@code python -m sglang.bench_serving}.
 */
@Command(
    name = "serve",
    mixinStandardHelpOptions = true,
    description =
        "Benchmark a running server (ours or any OpenAI-compatible one) as sglang.bench_serving"
            + " does: Poisson arrivals, bounded concurrency, streamed responses timed per chunk;"
            + " prints sglang's summary table and appends its JSON line to --output-file.")
final class BenchServeCommand implements Callable<Integer> {
  @Spec picocli.CommandLine.Model.CommandSpec spec;

  @Option(
      names = "--backend",
      defaultValue = "sglang",
      description =
          "sglang | ringmaster (native /generate), openai | sglang-oai | vllm (/v1/completions),"
              + " openai-chat | sglang-oai-chat | vllm-chat (/v1/chat/completions). Default:"
              + " ${DEFAULT-VALUE}.")
  String backend;

  @Option(names = "--base-url", description = "Server URL, e.g. http://127.0.0.1:30000.")
  String baseUrl;

  @Option(names = "--host", defaultValue = "127.0.0.1", description = "Without --base-url.")
  String host;

  @Option(names = "--port", defaultValue = "30000", description = "Without --base-url.")
  int port;

  @Option(
      names = "--model",
      description =
          "Model name to send (default: the first of GET /v1/models); a local model directory"
              + " also serves as the tokenizer.")
  String model;

  @Option(names = "--served-model-name", description = "Name to send instead of --model.")
  String servedModelName;

  @Option(
      names = "--tokenizer",
      description =
          "Directory holding tokenizer.json (or the file). Default: --model or the served"
              + " model's root from /v1/models, where it is a local directory.")
  Path tokenizer;

  @Option(
      names = "--api-key",
      defaultValue = "${env:OPENAI_API_KEY}",
      description = "Sent as 'Authorization: Bearer KEY' (default: $OPENAI_API_KEY).")
  String apiKey;

  @Option(
      names = "--dataset-name",
      defaultValue = "sharegpt",
      description = "sharegpt | random | random-ids | generated-shared-prefix. Default: sharegpt.")
  String datasetName;

  @Option(
      names = "--dataset-path",
      description =
          "ShareGPT-format JSON file (sharegpt; random takes its text from it when given).")
  Path datasetPath;

  @Option(
      names = {"--num-prompts", "--num-prompt"},
      defaultValue = "1000",
      description = "Requests. Default: ${DEFAULT-VALUE}.")
  int numPrompts;

  @Option(names = "--sharegpt-output-len", description = "Output tokens per ShareGPT request.")
  Integer sharegptOutputLen;

  @Option(
      names = "--sharegpt-context-len",
      description = "Drop ShareGPT requests longer than this (prompt plus output).")
  Integer sharegptContextLen;

  @Option(
      names = {"--random-input-len", "--random-input"},
      defaultValue = "1024",
      description = "Longest random prompt in tokens. Default: ${DEFAULT-VALUE}.")
  int randomInputLen;

  @Option(
      names = {"--random-output-len", "--random-output"},
      defaultValue = "1024",
      description = "Longest random output in tokens. Default: ${DEFAULT-VALUE}.")
  int randomOutputLen;

  @Option(
      names = "--random-range-ratio",
      defaultValue = "0.0",
      description =
          "Random lengths are uniform in [max(1, len x ratio), len]; 1 = fixed. Default:"
              + " ${DEFAULT-VALUE}.")
  double randomRangeRatio;

  @Option(names = "--gsp-num-groups", defaultValue = "64", description = "System prompts.")
  int gspNumGroups;

  @Option(names = "--gsp-prompts-per-group", defaultValue = "16", description = "Per group.")
  int gspPromptsPerGroup;

  @Option(names = "--gsp-system-prompt-len", defaultValue = "2048", description = "Tokens.")
  int gspSystemPromptLen;

  @Option(names = "--gsp-question-len", defaultValue = "128", description = "Tokens.")
  int gspQuestionLen;

  @Option(names = "--gsp-output-len", defaultValue = "256", description = "Tokens.")
  int gspOutputLen;

  @Option(
      names = "--gsp-range-ratio",
      defaultValue = "1.0",
      description = "As --random-range-ratio.")
  double gspRangeRatio;

  @Option(
      names = "--request-rate",
      defaultValue = "inf",
      description = "Requests per second, Poisson arrivals; inf sends all at once. Default: inf.")
  String requestRate;

  @Option(names = "--max-concurrency", description = "Requests in flight at most.")
  Integer maxConcurrency;

  @Option(
      names = "--warmup-requests",
      defaultValue = "1",
      description = "Untimed requests first (at most 32 output tokens). Default: ${DEFAULT-VALUE}.")
  int warmupRequests;

  @Option(names = "--seed", defaultValue = "1", description = "Dataset and arrivals seed.")
  long seed;

  @Option(names = "--disable-ignore-eos", description = "Let requests stop at end-of-sequence.")
  boolean disableIgnoreEos;

  @Option(names = "--disable-stream", description = "Whole responses (TTFT = E2E latency).")
  boolean disableStream;

  @Option(
      names = "--extra-request-body",
      description = "JSON object merged into every request body, e.g. '{\"top_p\": 0.9}'.")
  String extraRequestBody;

  @Option(names = "--disable-tqdm", description = "No progress bar.")
  boolean disableProgress;

  @Option(
      names = "--flush-cache",
      description =
          "Empty the server's prefix cache (POST /flush_cache) after the warm-up, so a repeated"
              + " run of the same prompts does not find them cached.")
  boolean flushCache;

  @Option(names = "--tag", description = "Copied to the result's 'tag'.")
  String tag;

  @Option(names = "--output-file", description = "Append the JSON result line to this file.")
  Path outputFile;

  @Option(
      names = "--output-details",
      description = "Add per-request lengths, TTFTs, ITLs, texts and errors to the JSON line.")
  boolean outputDetails;

  @Option(names = "--plot", description = "Write TTFT, ITL and E2E histograms and CDFs (PNG).")
  Path plot;

  @Option(names = "--json", description = "Print the JSON result line instead of the table.")
  boolean json;

  @Option(names = "--history", description = "Append the result to this history file (JSONL).")
  Path history;

  @Option(
      names = "--compare-one-batch",
      paramLabel = "FILE",
      description =
          "A bench one-batch --json result: print and record the output throughput as a share of"
              + " its batch size equal to --max-concurrency, of decode only and of total (prefill"
              + " plus decode).")
  Path compareOneBatch;

  @Override
  public Integer call() throws Exception {
    if (plot != null && !PngSupport.available()) {
      throw new UserError("--plot: " + PngSupport.missingReason() + ", or leave out --plot");
    }
    BenchServeConfig config = config();
    OneBatchReference reference;
    try {
      reference =
          compareOneBatch == null
              ? null
              : OneBatchReference.read(compareOneBatch, config.load().maxConcurrency());
    } catch (BenchServeException e) {
      throw new UserError(e.getMessage());
    }
    BenchServeResult r;
    try {
      r = BenchServe.run(config, System.err);
    } catch (BenchServeException e) {
      throw new UserError(e.getMessage());
    }
    if (r.metrics().completed() == 0) {
      throw new UserError(
          "all " + r.rows().size() + " requests failed; the first error: " + r.firstError());
    }
    ObjectNode line = ResultReport.json(r);
    double served = r.metrics().outputThroughput();
    if (reference != null) {
      line.set("one_batch_comparison", reference.json(served, config.dataset()));
    }
    String js = new ObjectMapper().writeValueAsString(line);
    if (json) {
      System.out.println(js);
    } else {
      System.out.print(ResultReport.table(r));
      if (reference != null) {
        System.out.print(reference.table(served, config.dataset()));
      }
    }
    if (r.metrics().completed() < r.rows().size()) {
      System.err.printf(
          "bench serve: %d of %d requests failed; the first error: %s%n",
          r.rows().size() - r.metrics().completed(), r.rows().size(), r.firstError());
    }
    if (outputFile != null) {
      Path parent = outputFile.toAbsolutePath().getParent();
      if (parent != null) {
        Files.createDirectories(parent);
      }
      Files.writeString(
          outputFile,
          js + "\n",
          StandardCharsets.UTF_8,
          StandardOpenOption.CREATE,
          StandardOpenOption.APPEND);
    }
    if (plot != null) {
      LatencyPlot.write(plot, r);
    }
    if (history != null) {
      BenchmarkHistory.append(
          history,
          "serve",
          commandLine(),
          line,
          reference == null
              ? "none (absolute figures; compare with bench one-batch at the same batch size)"
              : "bench one-batch " + reference.file() + " at batch " + reference.batchSize());
    }
    return 0;
  }

  private BenchServeConfig config() throws IOException {
    String url = baseUrl != null ? stripSlash(baseUrl) : "http://" + host + ":" + port;
    ObjectNode extra = null;
    if (extraRequestBody != null) {
      try {
        var node = new ObjectMapper().readTree(extraRequestBody);
        if (!(node instanceof ObjectNode o)) {
          throw new UserError(
              "--extra-request-body must be a JSON object, e.g. '{\"top_p\": 0.9}'");
        }
        extra = o;
      } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
        throw new UserError("--extra-request-body is not valid JSON: " + e.getOriginalMessage());
      }
    }
    try {
      Backend.parse(backend);
      return new BenchServeConfig(
              new BenchServeConfig.Target(
                  backend, url, model, servedModelName, tokenizer, blankToNull(apiKey)),
              new BenchServeConfig.Dataset(
                  datasetName,
                  datasetPath,
                  datasetName.equals("generated-shared-prefix")
                      ? gspNumGroups * gspPromptsPerGroup
                      : numPrompts,
                  sharegptOutputLen,
                  sharegptContextLen,
                  randomInputLen,
                  randomOutputLen,
                  randomRangeRatio,
                  new BenchServeConfig.SharedPrefix(
                      gspNumGroups,
                      gspPromptsPerGroup,
                      gspSystemPromptLen,
                      gspQuestionLen,
                      gspOutputLen,
                      gspRangeRatio)),
              new BenchServeConfig.Load(
                  rate(requestRate),
                  maxConcurrency,
                  warmupRequests,
                  seed,
                  disableIgnoreEos,
                  disableStream,
                  extra,
                  disableProgress,
                  flushCache),
              tag,
              outputDetails)
          .validate();
    } catch (BenchServeException e) {
      throw new UserError(e.getMessage());
    }
  }

  /** The command as typed (from {@code ringmaster}), arguments with spaces or quotes quoted. */
  private String commandLine() {
    StringBuilder sb = new StringBuilder("ringmaster");
    for (String a : spec.commandLine().getParseResult().originalArgs()) {
      sb.append(' ');
      sb.append(a.matches("[A-Za-z0-9_./:,=+@%-]+") ? a : "'" + a.replace("'", "'\\''") + "'");
    }
    return sb.toString();
  }

  /** A request rate: a positive number, or inf / infinity for all at once. */
  static double rate(String s) {
    String t = s.strip().toLowerCase(Locale.ROOT);
    if (t.equals("inf") || t.equals("infinity")) {
      return Double.POSITIVE_INFINITY;
    }
    try {
      return Double.parseDouble(t);
    } catch (NumberFormatException e) {
      throw new UserError("--request-rate " + s + " is not a number (or inf)");
    }
  }

  private static String stripSlash(String url) {
    return url.endsWith("/") ? url.substring(0, url.length() - 1) : url;
  }

  private static String blankToNull(String s) {
    return s == null || s.isBlank() ? null : s;
  }
}
