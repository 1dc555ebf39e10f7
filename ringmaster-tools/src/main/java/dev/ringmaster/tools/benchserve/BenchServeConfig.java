package dev.ringmaster.tools.benchserve;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.file.Path;
import java.util.List;

/**
 * Everything one {@code bench serve} run needs, with sglang.bench_serving's meanings.
 *
 * @param target where the requests go
 * @param dataset what the prompts are
 * @param load how they arrive
 * @param tag free text copied to the result's {@code tag}
 * @param outputDetails add per-request lengths, TTFTs, ITLs, texts and errors to the result
 */
public record BenchServeConfig(
    Target target, Dataset dataset, Load load, String tag, boolean outputDetails) {

  /**
   * The server.
   *
   * @param backendName the {@code --backend} name as given (reported as {@code backend})
   * @param baseUrl scheme, host and port, without a trailing slash
   * @param model the model name to send, or null to ask {@code /v1/models}; a local directory is
   *     also tried as the tokenizer
   * @param servedModelName the name to send instead of {@code model}, or null
   * @param tokenizer a directory holding tokenizer.json (or the file), or null to find one
   * @param apiKey sent as {@code Authorization: Bearer}, or null
   */
  public record Target(
      String backendName,
      String baseUrl,
      String model,
      String servedModelName,
      Path tokenizer,
      String apiKey) {
    /** The backend the name stands for. */
    public Backend backend() {
      return Backend.parse(backendName);
    }
  }

  /** The dataset names {@code --dataset-name} accepts. */
  public static final List<String> DATASETS =
      List.of("sharegpt", "random", "random-ids", "generated-shared-prefix");

  /**
   * The prompts.
   *
   * @param name one of {@link #DATASETS}
   * @param path a ShareGPT-format JSON file (sharegpt; random takes its text from it when given)
   * @param numPrompts requests to send (generated-shared-prefix: groups x prompts per group)
   * @param sharegptOutputLen output tokens per ShareGPT request instead of the reply's length
   * @param sharegptContextLen drop ShareGPT requests whose prompt plus output exceed this
   * @param randomInputLen the longest random prompt
   * @param randomOutputLen the longest random output
   * @param randomRangeRatio lengths are uniform in [max(1, len x ratio), len]
   * @param gsp the generated-shared-prefix shape
   */
  public record Dataset(
      String name,
      Path path,
      int numPrompts,
      Integer sharegptOutputLen,
      Integer sharegptContextLen,
      int randomInputLen,
      int randomOutputLen,
      double randomRangeRatio,
      SharedPrefix gsp) {}

  /**
   * The generated-shared-prefix dataset: groups of prompts sharing a random system prompt.
   *
   * @param numGroups system prompts
   * @param promptsPerGroup questions per system prompt
   * @param systemPromptLen system prompt tokens
   * @param questionLen question tokens
   * @param outputLen output tokens
   * @param rangeRatio lengths are uniform in [max(1, len x ratio), len]
   */
  public record SharedPrefix(
      int numGroups,
      int promptsPerGroup,
      int systemPromptLen,
      int questionLen,
      int outputLen,
      double rangeRatio) {}

  /**
   * Arrivals and request options.
   *
   * @param requestRate requests per second, Poisson; infinite sends all at once
   * @param maxConcurrency requests in flight at most, or null for no limit
   * @param warmupRequests untimed requests sent first (the first prompt, at most 32 tokens out)
   * @param seed seeds the dataset and the arrivals
   * @param disableIgnoreEos let requests stop at end-of-sequence
   * @param disableStream ask for whole responses (TTFT is then the end-to-end latency)
   * @param extraRequestBody merged into every request body (objects merge key by key)
   * @param disableProgress no progress bar
   * @param flushCache ask the server to drop its prefix cache ({@code POST /flush_cache}, SGLang's
   *     endpoint) after the warm-up, so repeated runs of one dataset measure the same work
   */
  public record Load(
      double requestRate,
      Integer maxConcurrency,
      int warmupRequests,
      long seed,
      boolean disableIgnoreEos,
      boolean disableStream,
      ObjectNode extraRequestBody,
      boolean disableProgress,
      boolean flushCache) {}

  /**
   * Checks every value before anything is sent.
   *
   * @throws BenchServeException naming the flag and what it accepts
   */
  public BenchServeConfig validate() {
    Backend backend = target.backend();
    if (!DATASETS.contains(dataset.name)) {
      throw new BenchServeException(
          "--dataset-name " + dataset.name + " is unknown; choose one of " + DATASETS);
    }
    positive("--num-prompts", dataset.numPrompts);
    positive("--random-input-len", dataset.randomInputLen);
    positive("--random-output-len", dataset.randomOutputLen);
    ratio("--random-range-ratio", dataset.randomRangeRatio);
    positive("--gsp-num-groups", dataset.gsp.numGroups());
    positive("--gsp-prompts-per-group", dataset.gsp.promptsPerGroup());
    positive("--gsp-system-prompt-len", dataset.gsp.systemPromptLen());
    positive("--gsp-question-len", dataset.gsp.questionLen());
    positive("--gsp-output-len", dataset.gsp.outputLen());
    ratio("--gsp-range-ratio", dataset.gsp.rangeRatio());
    if (dataset.sharegptOutputLen != null && dataset.sharegptOutputLen < 4) {
      throw new BenchServeException(
          "--sharegpt-output-len " + dataset.sharegptOutputLen + " is too small (at least 4)");
    }
    if (dataset.sharegptContextLen != null) {
      positive("--sharegpt-context-len", dataset.sharegptContextLen);
    }
    if (dataset.name.equals("sharegpt") && dataset.path == null) {
      throw new BenchServeException(
          "--dataset-name sharegpt needs --dataset-path FILE (a ShareGPT-format JSON file, e.g."
              + " ShareGPT_V3_unfiltered_cleaned_split.json); or use --dataset-name random");
    }
    if (dataset.name.equals("random-ids") && backend == Backend.CHAT) {
      throw new BenchServeException(
          "--dataset-name random-ids sends token ids, which chat completions cannot take; use"
              + " --dataset-name random with --backend "
              + target.backendName
              + ", or a completions or native backend");
    }
    if (!(load.requestRate > 0)) {
      throw new BenchServeException(
          "--request-rate " + load.requestRate + " must be positive (or inf: all at once)");
    }
    if (load.maxConcurrency != null) {
      positive("--max-concurrency", load.maxConcurrency);
    }
    if (load.warmupRequests < 0) {
      throw new BenchServeException(
          "--warmup-requests " + load.warmupRequests + " must be 0 or more");
    }
    if (!target.baseUrl.startsWith("http://") && !target.baseUrl.startsWith("https://")) {
      throw new BenchServeException(
          "--base-url " + target.baseUrl + " must start with http:// or https://");
    }
    return this;
  }

  private static void positive(String flag, int v) {
    if (v < 1) {
      throw new BenchServeException(flag + " " + v + " must be at least 1");
    }
  }

  private static void ratio(String flag, double v) {
    if (!(v >= 0 && v <= 1)) {
      throw new BenchServeException(flag + " " + v + " must be between 0 and 1");
    }
  }
}
