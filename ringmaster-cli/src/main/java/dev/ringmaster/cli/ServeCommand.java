package dev.ringmaster.cli;

import dev.ringmaster.engine.batch.BatchConfig;
import dev.ringmaster.engine.batch.BatchEngine;
import dev.ringmaster.engine.batch.SchedulePolicy;
import dev.ringmaster.engine.batch.ServingDefaults;
import dev.ringmaster.engine.spec.ServingSpeculation;
import dev.ringmaster.engine.spec.SpeculativePolicy;
import dev.ringmaster.model.tokenizer.Tokenizer;
import dev.ringmaster.runtime.DraftHead;
import dev.ringmaster.runtime.LanguageModel;
import dev.ringmaster.server.RingmasterServer;
import dev.ringmaster.server.ServerConfig;
import dev.ringmaster.server.ServingModel;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code ringmaster serve}: the OpenAI-compatible HTTP server with continuous batching. SIGTERM (or
 * Ctrl-C) drains: new requests get 503, running ones finish within {@code --shutdown-timeout}, the
 * rest are aborted, and the process exits 0.
 */
@Command(
    name = "serve",
    mixinStandardHelpOptions = true,
    description = "Serve a model over HTTP (OpenAI-compatible and native API, /metrics).")
final class ServeCommand implements Callable<Integer> {
  @Option(
      names = "--model",
      description = "Hugging Face model directory (default: the embedded model).")
  Path model;

  @Option(
      names = "--served-model-name",
      description = "Model id clients use (default: the directory name).")
  String servedModelName;

  @Option(names = "--host", defaultValue = "127.0.0.1", description = "Default: ${DEFAULT-VALUE}.")
  String host;

  @Option(
      names = "--port",
      defaultValue = "30000",
      description = "Default: ${DEFAULT-VALUE}; 0 picks a free port.")
  int port;

  @Option(
      names = "--skip-server-warmup",
      description =
          "Report the server ready without first sending it one streamed and one plain completion"
              + " of 8 tokens (\"The capital city of France is\"), which warm the serving path"
              + " so that the first client's request is not slowed by it.")
  boolean skipServerWarmup;

  @Option(
      names = "--api-key",
      description = "Require 'Authorization: Bearer KEY' on every endpoint but /health.")
  String apiKey;

  @Mixin EngineOptions engine = EngineOptions.forServing();

  @Mixin SpeculativeOptions speculative = new SpeculativeOptions();

  @Option(
      names = "--speculative-policy",
      paramLabel = "auto|always",
      description =
          "With --speculative-algorithm: auto drafts only at batch sizes and draft lengths where"
              + " the measured verify cost and the acceptance so far promise more tokens per"
              + " second than plain decoding (by --speculative-margin); always drafts every decode"
              + " step (default: auto).")
  String speculativePolicy;

  @Option(
      names = "--speculative-margin",
      paramLabel = "FRACTION",
      description =
          "The gain over plain decoding the auto policy asks for before it drafts (default:"
              + " 0.05, that is 5%%).")
  Double speculativeMargin;

  @Option(
      names = "--page-size",
      description =
          "Token positions per KV block, the unit the radix cache shares (default: 16 on the"
              + " CPU; on the GPU it is the KV cache's block size, default 64, 1.."
              + dev.ringmaster.cuda.model.CudaModelOptions.MAX_BLOCK_SIZE
              + ").")
  Integer pageSize;

  @Option(
      names = "--disable-radix-cache",
      description =
          "Do not keep finished prefixes' KV pages for later requests (default: the radix"
              + " prefix cache is on, across nodes too).")
  boolean disableRadixCache;

  @Option(
      names = "--schedule-policy",
      defaultValue = "lpm",
      description =
          "Admission order: lpm (longest cached prefix first, a request passed over "
              + SchedulePolicy.LPM_STARVATION_BOUND
              + " times goes first; arrival order when the radix cache is off) or fcfs (first"
              + " come, first served) (default: ${DEFAULT-VALUE}, measured faster on"
              + " shared-prefix workloads).")
  String schedulePolicy;

  @Option(
      names = "--max-running-requests",
      description =
          "Requests in the running batch at most. Default derived as SGLang does: at most half"
              + " the KV pool's tokens, at most pool tokens / context length * 512 clamped to"
              + " [2048, 4096], and at most the largest captured decode graph (the GPU; "
              + ServingDefaults.CPU_MAX_RUNNING_REQUESTS
              + " on the CPU, measured with bench serve). serve prints the value it chose.")
  Integer maxRunningRequests;

  @Option(
      names = "--disable-overlap-schedule",
      description =
          "Run each forward on the engine thread instead of overlapping it with planning the"
              + " next step (default: overlap on).")
  boolean disableOverlapSchedule;

  @Option(
      names = "--disable-jump-forward",
      description =
          "Sample every token of a constrained (structured) output instead of appending, without"
              + " sampling, the bytes the constraint forces (jump-forward decoding, SGLang's"
              + " flag; default: on).")
  boolean disableJumpForward;

  @Option(
      names = "--max-queued-requests",
      defaultValue = "1024",
      description = "Waiting requests at most; more get 503 (default: ${DEFAULT-VALUE}).")
  int maxQueuedRequests;

  @Option(
      names = "--max-request-bytes",
      defaultValue = "8388608",
      description = "Largest request body (default: ${DEFAULT-VALUE}).")
  long maxRequestBytes;

  @Option(
      names = "--max-n",
      defaultValue = "16",
      description = "Largest 'n' (choices per prompt) accepted (default: ${DEFAULT-VALUE}).")
  int maxN;

  @Option(
      names = "--shutdown-timeout",
      defaultValue = "30",
      description = "Seconds a shutdown waits for running requests (default: ${DEFAULT-VALUE}).")
  int shutdownTimeout;

  @Option(
      names = "--allowed-origins",
      split = ",",
      description =
          "Browser origins allowed to call the API (CORS), e.g. https://app.example, or * for any"
              + " (default: none, no CORS headers).")
  List<String> allowedOrigins;

  @Override
  public Integer call() throws Exception {
    cpuKvFraction(); // check the flag before loading the model
    engine.tuning();
    validate(); // before the model loads: a wrong flag or a busy port costs no loading time
    Path dir = DefaultModel.resolve(model);
    if (engine.follower()) {
      return engine.follow(dir); // node 0 serves HTTP; this node runs its ranks
    }
    speculative.validate(dir); // reads only config.json and tokenizer.json files
    speculative.checkBackend(engine);
    engine.warmupVerifyTokens = speculative.verifyTokens();
    Tokenizer tok = Tokenizer.load(dir);
    engine.cudaBlockSize = pageSize; // on the GPU one page is one cache block
    LanguageModel lm = engine.open(dir);
    LanguageModel draft = null;
    DraftHead head = null;
    BatchEngine batch;
    try {
      draft = speculative.openDraft(engine.tuning());
      head = speculative.openHead(lm);
      batch = BatchEngine.start(lm, batchConfig(lm), speculation(draft, head));
    } catch (IllegalArgumentException | UserError e) {
      if (head != null) {
        head.close();
      }
      if (draft != null) {
        draft.close();
      }
      lm.close();
      throw e instanceof UserError u ? u : new UserError(e.getMessage());
    }
    LanguageModel draftModel = draft;
    DraftHead draftHead = head;
    String name = servedModelName != null ? servedModelName : dir.getFileName().toString();
    ServerConfig cfg =
        new ServerConfig(
            host,
            port,
            apiKey,
            maxRequestBytes,
            maxN,
            Duration.ofSeconds(shutdownTimeout),
            flags(dir, batch.config()),
            allowedOrigins != null ? allowedOrigins : List.of());
    RingmasterServer server;
    try {
      server = RingmasterServer.start(new ServingModel(name, dir.toString(), tok, batch), cfg);
    } catch (RuntimeException e) {
      batch.close();
      lm.close();
      throw new UserError("cannot listen on " + host + ":" + port + ": " + e.getMessage());
    }
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  System.err.println("ringmaster: shutting down (draining requests)");
                  server.shutdown();
                  if (draftHead != null) {
                    draftHead.close();
                  }
                  lm.close();
                  if (draftModel != null) {
                    draftModel.close();
                  }
                  stopped.countDown();
                  // A SIGTERM is the normal way to stop a server: report success, not 143.
                  Runtime.getRuntime().halt(0);
                },
                "ringmaster-shutdown"));
    if (engine.cudaGraphMaxBs != null && !"cuda".equals(engine.resolvedDevice)) {
      System.err.println("ringmaster: --cuda-graph-max-bs has no effect on the CPU backend");
    }
    var pool = batch.pool();
    System.err.printf(
        "ringmaster: model %s (%s); %s%n",
        name,
        lm.config().architecture().modelType(),
        kvCacheLine(pool.capacityTokens(), pool.capacity(), pool.pageSize(), lm.kvBytesPerToken()));
    System.err.println(
        "ringmaster: "
            + ServingDefaults.describe(
                batch.config().maxRunningRequests(),
                maxRunningRequests == null,
                batch.config().chunkedPrefillSize(),
                engine.chunkedPrefillSize == null,
                pool.capacityTokens(),
                lm.decodeGraphBatchSizes())
            + (batch.config().overlap() ? "; overlap schedule on" : "; overlap schedule off")
            + (batch.config().radixCache()
                ? "; radix cache on (" + batch.config().schedulePolicy().flagName() + ")"
                : "; radix cache off"));
    batch
        .speculation()
        .ifPresent(
            sp ->
                System.err.printf(
                    "ringmaster: speculative %s, up to %d draft tokens, policy %s%s%n",
                    sp.algorithm(),
                    sp.numDraftTokens(),
                    sp.policy().name().toLowerCase(Locale.ROOT),
                    sp.policy() == SpeculativePolicy.AUTO
                        ? String.format(Locale.ROOT, " (margin %.0f%%)", sp.margin() * 100)
                        : ""));
    if (!skipServerWarmup) {
      try {
        long ms = ServerWarmup.run(server.url(), apiKey);
        System.err.printf(
            "ringmaster: warm-up requests, %d ms (--skip-server-warmup skips them)%n", ms);
      } catch (java.io.IOException e) {
        System.err.println(
            "ringmaster: warning: the warm-up requests failed ("
                + e.getMessage()
                + "); serving without them");
      }
    }
    System.out.println("ringmaster: serving at " + server.url());
    System.out.flush();
    stopped.await();
    return 0;
  }

  /**
   * The start-up line on the KV cache: tokens, blocks, and bytes as the model stores them (bf16
   * rows on the GPU, f32 on the CPU) in GB of 10^9 bytes, the unit of the GPU memory plan.
   */
  static String kvCacheLine(long tokens, long blocks, int pageSize, long bytesPerToken) {
    double bytes = (double) tokens * bytesPerToken;
    String size =
        bytes >= 1e9
            ? String.format(Locale.ROOT, "%.2f GB", bytes / 1e9)
            : String.format(Locale.ROOT, "%.1f MB", bytes / 1e6);
    return String.format(
        Locale.ROOT, "KV cache %d tokens (%d blocks of %d, %s)", tokens, blocks, pageSize, size);
  }

  /** Every flag checked before anything loads; the port tried, so a busy one fails at once. */
  private void validate() {
    engine.validate();
    FlagChecks.port(port);
    FlagChecks.atLeast("--page-size", pageSize, 1);
    try {
      SchedulePolicy.parse(schedulePolicy);
    } catch (IllegalArgumentException e) {
      throw new UserError(e.getMessage());
    }
    FlagChecks.atLeast("--max-running-requests", maxRunningRequests, 1);
    FlagChecks.atLeast("--max-queued-requests", maxQueuedRequests, 1);
    FlagChecks.atLeast("--max-request-bytes", maxRequestBytes, 1);
    FlagChecks.atLeast("--max-n", maxN, 1);
    FlagChecks.atLeast("--shutdown-timeout", shutdownTimeout, 0);
    if (!speculative.enabled() && (speculativePolicy != null || speculativeMargin != null)) {
      throw new UserError(
          (speculativePolicy != null ? "--speculative-policy" : "--speculative-margin")
              + " needs --speculative-algorithm NGRAM, STANDALONE, NEXTN or EAGLE3");
    }
    policy();
    if (speculativeMargin != null && !(speculativeMargin >= 0 && speculativeMargin < 10)) {
      throw new UserError(
          "--speculative-margin must be a fraction in [0, 10) (0.05 asks for 5% more throughput),"
              + " got "
              + speculativeMargin);
    }
    if (allowedOrigins != null) {
      for (String o : allowedOrigins) {
        if (o.isBlank()
            || !(o.equals("*") || o.startsWith("http://") || o.startsWith("https://"))) {
          throw new UserError(
              "--allowed-origins takes * or origins such as https://app.example, got '" + o + "'");
        }
      }
    }
    cpuKvFraction();
    FlagChecks.portFree(host, port);
  }

  /**
   * On the CPU the KV budget is a fraction of the free Java heap ({@code --mem-fraction-static},
   * default 0.5); on the GPU the model's memory plan sizes the cache from device memory.
   */
  private double cpuKvFraction() {
    double f = engine.memFractionStatic != null ? engine.memFractionStatic : 0.5;
    if (!(f > 0 && f <= 1)) {
      throw new UserError("--mem-fraction-static must be in (0, 1], got " + f);
    }
    return f;
  }

  private SpeculativePolicy policy() {
    try {
      return speculativePolicy == null
          ? SpeculativePolicy.AUTO
          : SpeculativePolicy.parse(speculativePolicy);
    } catch (IllegalArgumentException e) {
      throw new UserError("--speculative-policy: " + e.getMessage());
    }
  }

  /** The engine's speculation from the flags (after {@link SpeculativeOptions#validate}). */
  private ServingSpeculation speculation(LanguageModel draft, DraftHead head) {
    if (!speculative.enabled()) {
      return null;
    }
    return new ServingSpeculation(
        speculative.config(),
        draft,
        policy(),
        speculativeMargin != null ? speculativeMargin : ServingSpeculation.DEFAULT_MARGIN,
        null,
        head);
  }

  private BatchConfig batchConfig(LanguageModel lm) {
    long bytesPerToken = lm.kvBytesPerToken();
    long tokens;
    if (engine.maxTotalTokens != null) {
      tokens = engine.maxTotalTokens;
    } else if (lm.kvCapacityTokens().isPresent()) {
      // The GPU sized its paged cache from device memory; admit no more than it holds.
      tokens = lm.kvCapacityTokens().getAsLong();
    } else {
      Runtime rt = Runtime.getRuntime();
      long free = rt.maxMemory() - (rt.totalMemory() - rt.freeMemory());
      tokens = (long) (free * cpuKvFraction()) / bytesPerToken;
    }
    // The GPU's block size is the page size (given or its default); the CPU's default is 16.
    int pageSize = lm.kvPageSize().orElse(this.pageSize != null ? this.pageSize : 16);
    long blocks = tokens / pageSize;
    if (blocks < 1) {
      throw new UserError(
          "the KV cache budget holds no block of "
              + pageSize
              + " tokens; raise --mem-fraction-static, --max-total-tokens or the heap (-Xmx)");
    }
    int running =
        maxRunningRequests != null
            ? maxRunningRequests
            : ServingDefaults.maxRunningRequests(
                blocks * pageSize, lm.config().maxPositionEmbeddings(), lm.decodeGraphBatchSizes());
    return new BatchConfig(
        running,
        maxQueuedRequests,
        engine.chunkedPrefillSizeForDevice(ServingDefaults.CPU_CHUNKED_PREFILL_SIZE),
        pageSize,
        (int) Math.min(blocks, Integer.MAX_VALUE - 1),
        !disableOverlapSchedule,
        radixCache(lm),
        SchedulePolicy.parse(schedulePolicy),
        !disableJumpForward);
  }

  /** On unless disabled, or the model's caches cannot share pages: then it says so. */
  private boolean radixCache(LanguageModel lm) {
    if (disableRadixCache) {
      return false;
    }
    if (!lm.sharesKvPages()) {
      System.err.println(
          "ringmaster: radix cache off: this model's KV caches cannot share pages"
              + " (pass --disable-radix-cache to say so and silence this line)");
      return false;
    }
    return true;
  }

  private Map<String, Object> flags(Path dir, BatchConfig batch) {
    Map<String, Object> f = new LinkedHashMap<>();
    f.put("model", dir.toString());
    f.put("host", host);
    f.put("port", port);
    f.put("api_key_set", apiKey != null);
    f.put("device", engine.device);
    f.put("tp_size", engine.parallel().tpSize());
    f.put("ep_size", engine.parallel().epSize());
    f.put("mem_fraction_static", cpuKvFraction());
    if (engine.maxTotalTokens != null) {
      f.put("max_total_tokens", engine.maxTotalTokens);
    }
    f.put("page_size", batch.pageSize());
    f.put("disable_radix_cache", !batch.radixCache());
    f.put("schedule_policy", batch.schedulePolicy().flagName());
    f.put("chunked_prefill_size", batch.chunkedPrefillSize());
    f.put("max_running_requests", batch.maxRunningRequests());
    f.put("max_running_requests_derived", maxRunningRequests == null);
    f.put("chunked_prefill_size_derived", engine.chunkedPrefillSize == null);
    f.put("disable_overlap_schedule", !batch.overlap());
    f.put("disable_jump_forward", !batch.jumpForward());
    f.put("max_queued_requests", maxQueuedRequests);
    if (engine.cudaGraphMaxBs != null) {
      f.put("cuda_graph_max_bs", engine.cudaGraphMaxBs);
    }
    f.put("max_request_bytes", maxRequestBytes);
    f.put("shutdown_timeout_s", shutdownTimeout);
    f.put("allowed_origins", allowedOrigins != null ? allowedOrigins : List.of());
    if (speculative.enabled()) {
      f.put("speculative_algorithm", speculative.config().algorithm().name());
      f.put("speculative_num_draft_tokens", speculative.config().numDraftTokens());
      f.put(
          "speculative_draft_model_path",
          speculative.draftPath() == null ? null : speculative.draftPath().toString());
      f.put("speculative_policy", policy().name().toLowerCase(Locale.ROOT));
      f.put(
          "speculative_margin",
          speculativeMargin != null ? speculativeMargin : ServingSpeculation.DEFAULT_MARGIN);
    } else {
      f.put("speculative_algorithm", null);
    }
    return f;
  }
}
