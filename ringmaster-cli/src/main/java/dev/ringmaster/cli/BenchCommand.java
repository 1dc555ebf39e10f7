package dev.ringmaster.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ringmaster.backend.cpu.bench.CpuMatmulBenchmark;
import dev.ringmaster.backend.cpu.bench.WeightFormat;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code ringmaster bench}: measurements that print tables and JSON. */
@Command(
    name = "bench",
    mixinStandardHelpOptions = true,
    description = "Benchmarks.",
    subcommands = {
      BenchCommand.CpuMatmul.class,
      BenchCommand.OneBatch.class,
      CollectivesBenchCommand.class,
      ScalingReportCommand.class,
      BenchServeCommand.class
    })
final class BenchCommand implements Runnable {
  @Override
  public void run() {
    throw new UserError(
        "choose a benchmark: bench cpu-matmul | bench one-batch | bench collectives | bench"
            + " scaling | bench serve");
  }

  /** {@code ringmaster bench cpu-matmul}: weight streaming GB/s against memory bandwidth. */
  @Command(
      name = "cpu-matmul",
      mixinStandardHelpOptions = true,
      description =
          "Time CPU matrix-vector and small matrix-matrix products and report weight streaming"
              + " GB/s against the measured memory read bandwidth.")
  static final class CpuMatmul implements Callable<Integer> {
    @Option(names = "--bits", split = ",", description = "Vector widths (default 128,256,512).")
    List<Integer> bits;

    @Option(
        names = "--dtypes",
        split = ",",
        description =
            "Weight formats: f32, bf16, f16, fp8-block, fp8-tensor, nvfp4 (default bf16,f32).")
    List<String> dtypes;

    @Option(
        names = "--shapes",
        split = ",",
        description = "Matrix shapes ROWSxCOLS (default 4096x4096,11008x4096).")
    List<String> shapes;

    @Option(names = "--n", split = ",", description = "Tokens per call (default 1,8).")
    List<Integer> tokens;

    @Option(names = "--seconds", defaultValue = "1", description = "Timed seconds per case.")
    double seconds;

    @Option(names = "--threads", description = "Kernel threads (default: all cores).")
    Integer threads;

    @Option(
        names = "--reference-dequantization",
        description =
            "Decode quantized rows with the scalar reference decoder instead of the vector"
                + " decoders (same results; for A/B comparisons).")
    boolean referenceDequantization;

    @Option(names = "--json", description = "Print only the JSON report.")
    boolean json;

    @Option(names = "--history", description = "Append the report to this history file (JSONL).")
    Path history;

    @Override
    public Integer call() throws Exception {
      CpuMatmulBenchmark.Options d = CpuMatmulBenchmark.Options.defaults();
      CpuMatmulBenchmark.Options o =
          new CpuMatmulBenchmark.Options(
              bits != null ? bits : d.vectorBits(),
              dtypes != null ? dtypes.stream().map(WeightFormat::parse).toList() : d.dtypes(),
              shapes != null
                  ? shapes.stream().map(CpuMatmulBenchmark.Shape::parse).toList()
                  : d.shapes(),
              tokens != null ? tokens : d.tokens(),
              seconds,
              d.bandwidthBufferBytes(),
              d.includeEmulated(),
              threads != null ? threads : d.threads(),
              referenceDequantization);
      CpuMatmulBenchmark.Report report = CpuMatmulBenchmark.run(o, System.err);
      String js = CpuMatmulBenchmark.json(report);
      if (json) {
        System.out.println(js);
      } else {
        System.out.print(CpuMatmulBenchmark.table(report));
      }
      if (history != null) {
        BenchmarkHistory.append(
            history,
            "cpu-matmul",
            "ringmaster bench cpu-matmul",
            new ObjectMapper().readTree(js),
            "memory read bandwidth measured in the same run (streaming sum)");
      }
      return 0;
    }
  }

  /** {@code ringmaster bench one-batch}: prefill and decode latency of static batches. */
  @Command(
      name = "one-batch",
      mixinStandardHelpOptions = true,
      description =
          "Prefill, decode and total (prefill plus decode) latency and throughput of one static"
              + " batch per batch size, without a server (like sglang.bench_one_batch); each batch"
              + " size is timed after an"
              + " untimed warm-up of the same prompts (--warmup-rounds of a prefill and --warmup-decode-steps).")
  static final class OneBatch implements Callable<Integer> {
    @Option(names = "--model", description = "Model directory (default: the embedded model).")
    Path model;

    @picocli.CommandLine.Mixin EngineOptions engine = new EngineOptions();

    @Option(names = "--batch-size", split = ",", defaultValue = "1", description = "e.g. 1,8,32.")
    List<Integer> batchSizes;

    @Option(names = "--input-len", defaultValue = "512", description = "Prompt tokens.")
    int inputLen;

    @Option(names = "--output-len", defaultValue = "128", description = "Decode steps.")
    int outputLen;

    @Option(names = "--seed", defaultValue = "0", description = "Seed of the random prompts.")
    long seed;

    @Option(
        names = "--warmup-rounds",
        defaultValue = "auto",
        description =
            "Untimed rounds, each a prefill of the same prompts and --warmup-decode-steps decode"
                + " steps, before each batch size is timed: a count, or auto (the default): at"
                + " least 4, then more until the JIT has settled (its compilation under 2%% of the"
                + " last 10 rounds' time, or of the last 3 or more that took 2 s), at most 200.")
    String warmupRounds;

    @Option(
        names = "--warmup-decode-steps",
        defaultValue = "64",
        description =
            "Untimed decode steps of the whole batch per warm-up round (default 64; the JIT"
                + " compiles the CPU kernels' hot loops only after hundreds of steps).")
    int warmupDecodeSteps;

    @Option(names = "--json", description = "Print the results as JSON.")
    boolean json;

    @Option(
        names = "--speculative-num-draft-tokens",
        split = ",",
        paramLabel = "K",
        description =
            "Also time a speculative verify pass of K draft tokens per sequence at each batch size"
                + " (each sequence extends by K + 1 tokens over its cached context with the argmax"
                + " of every row, as greedy drafts are verified, then rolls back), e.g. 2,4,8;"
                + " printed in decode steps, and in --json as verify (default: none).")
    List<Integer> draftTokens = List.of();

    @Option(
        names = "--shared-prefix",
        description =
            "Give every sequence of a batch the same prompt, prefilled once and its KV pages"
                + " shared by all (as the radix cache shares a common prefix), so that long"
                + " contexts at large batch sizes can be timed; the prefill figures are that one"
                + " prompt's, warm-up rounds prefill one KV page per sequence. --input-len must be"
                + " whole KV pages; not with --speculative-num-draft-tokens.")
    boolean sharedPrefix;

    @Option(names = "--history", description = "Append the results to this history file (JSONL).")
    Path history;

    /** What the verify columns mean, printed under their table. */
    static final String VERIFY_NOTE =
        "verify: K draft tokens per sequence, every sequence extended by K + 1 tokens over its"
            + " cached context (the argmax of every row) and rolled back; decode steps = verify ms /"
            + " the batch size's decode ms/step; repeating: the same over a prompt of one token"
            + " repeated, drafts repeating it (n-gram drafts of a repeating text: every row of a"
            + " sequence routes to the same experts), against a decode step of that text";

    /** What the "total" columns mean, printed under the table. */
    static final String TOTAL_NOTE =
        "total: the prefill plus output-len - 1 decode steps (a served request's steps, as"
            + " sglang.bench_one_batch's Total); total output tok/s = batch x output-len / total,"
            + " the ceiling for bench serve at that concurrency; decode tok/s excludes the prefill";

    private static final String PROFILE_WHERE =
        "--profile: the op-group breakdown is measured by the GPU model on one node"
            + " (--device cuda, without --nnodes)";

    @Option(
        names = "--profile",
        description =
            "GPU: time one eagerly launched step per batch size and prefill chunk by op group (the"
                + " per-kernel breakdown: attention, experts, norms, collectives, ...), and with"
                + " --speculative-num-draft-tokens one verify pass per length over the repeating"
                + " text; printed, and in --json as profile_ms.")
    boolean profile;

    /** The warm-up the flags ask for: a fixed count, or auto (the JIT settles). */
    dev.ringmaster.engine.bench.OneBatchBenchmark.Warmup warmup() {
      FlagChecks.atLeast("--warmup-decode-steps", warmupDecodeSteps, 0);
      var auto = dev.ringmaster.engine.bench.OneBatchBenchmark.Warmup.DEFAULT;
      if ("auto".equals(warmupRounds)) {
        return new dev.ringmaster.engine.bench.OneBatchBenchmark.Warmup(
            auto.rounds(), warmupDecodeSteps, true);
      }
      int rounds;
      try {
        rounds = Integer.parseInt(warmupRounds.trim());
      } catch (NumberFormatException e) {
        throw new UserError(
            "--warmup-rounds takes a count or auto (until the JIT settles), got '"
                + warmupRounds
                + "'");
      }
      FlagChecks.atLeast("--warmup-rounds", rounds, 1);
      return new dev.ringmaster.engine.bench.OneBatchBenchmark.Warmup(rounds, warmupDecodeSteps);
    }

    @Override
    public Integer call() throws Exception {
      engine.tuning(); // check the kernel options before reading any model file
      engine.validate();
      for (int b : batchSizes) {
        FlagChecks.atLeast("--batch-size", b, 1);
      }
      FlagChecks.atLeast("--input-len", inputLen, 1);
      FlagChecks.atLeast("--output-len", outputLen, 1);
      warmup(); // checked before the model loads
      int mostDrafts = 0;
      for (int k : draftTokens) {
        FlagChecks.atLeast("--speculative-num-draft-tokens", k, 1);
        mostDrafts = Math.max(mostDrafts, k);
      }
      if (sharedPrefix && !draftTokens.isEmpty()) {
        throw new UserError(
            "--shared-prefix does not time verify passes: drop --speculative-num-draft-tokens or"
                + " --shared-prefix");
      }
      Path dir = DefaultModel.resolve(model);
      FlagChecks.fitsContext(dir, "--input-len plus --output-len", (long) inputLen + outputLen);
      if (mostDrafts > 0) {
        FlagChecks.fitsContext(
            dir,
            "--input-len plus --output-len plus a verify pass of --speculative-num-draft-tokens "
                + mostDrafts
                + " (+ 1)",
            (long) inputLen + outputLen + mostDrafts + 1);
      }
      if (engine.follower()) {
        return engine.follow(dir); // node 0 runs the benchmark; this node runs its ranks
      }
      if (profile && "cpu".equals(engine.device)) {
        throw new UserError(PROFILE_WHERE + " (this run: --device cpu)");
      }
      engine.profile = profile;
      // The CPU warm-up also compiles the longest verify pass, as a speculative generate's does.
      engine.warmupVerifyTokens = mostDrafts > 0 ? mostDrafts + 1 : 0;
      return run(dir);
    }

    private int run(Path dir) throws Exception {
      var warmup = warmup();
      try (dev.ringmaster.runtime.LanguageModel lm = engine.open(dir)) {
        if (profile && !(lm instanceof dev.ringmaster.runtime.StepProfileReporting)) {
          throw new UserError(
              PROFILE_WHERE
                  + " (this run: "
                  + engine.resolvedDevice
                  + ", "
                  + engine.describe()
                  + ")");
        }
        var results =
            dev.ringmaster.engine.bench.OneBatchBenchmark.run(
                lm,
                batchSizes,
                inputLen,
                outputLen,
                seed,
                warmup,
                draftTokens,
                sharedPrefix,
                System.err);
        ObjectMapper m =
            new ObjectMapper()
                .setPropertyNamingStrategy(
                    com.fasterxml.jackson.databind.PropertyNamingStrategies.SNAKE_CASE);
        var node = m.createObjectNode();
        node.put("model", dir.toString());
        node.put("device", engine.resolvedDevice);
        node.set("kernel_tuning", m.valueToTree(engine.tuning().toMap()));
        // What one cached token costs the KV budget (indexer keys included, as stored).
        node.put("kv_bytes_per_token", lm.kvBytesPerToken());
        if (lm instanceof dev.ringmaster.cuda.model.CudaCausalLm gpu) {
          node.set("memory_plan", m.valueToTree(gpu.memoryPlan().toJson()));
        } else if (lm instanceof dev.ringmaster.cuda.model.TensorParallelCudaLm gpus) {
          // Every rank plans the same shapes; rank 0's plan stands for all.
          node.set("memory_plan", m.valueToTree(gpus.memoryPlan(0).toJson()));
        }
        node.put("tp_size", engine.parallel().tpSize());
        node.put("ep_size", engine.parallel().epSize());
        node.put(
            "allreduce", engine.allReduceAlgorithm().toString().toLowerCase(java.util.Locale.ROOT));
        if (engine.parallel().epSize() > 1) {
          node.put("moe_a2a_backend", engine.parallel().a2a().cliName());
        }
        node.set("warmup", m.valueToTree(warmup));
        node.put("shared_prefix", sharedPrefix);
        node.set("results", m.valueToTree(results));
        List<String> rooflineText =
            roofline(
                dir,
                node,
                m,
                results,
                engine.resolvedDevice,
                engine.parallel().tpSize(),
                engine.parallel().epSize());
        if (json) {
          System.out.println(m.writeValueAsString(node));
        } else {
          System.out.printf(
              "%6s %9s %12s %14s %12s %10s %12s %12s%n",
              "batch", "prefill", "prefill", "decode", "decode", "total", "total", "total");
          System.out.printf(
              "%6s %9s %12s %14s %12s %10s %12s %12s%n",
              "", "ms", "tok/s", "ms/step", "tok/s", "ms", "output tok/s", "tok/s");
          for (var r : results) {
            System.out.printf(
                "%6d %9.1f %12.0f %14.2f %12.1f %10.1f %12.1f %12.1f%n",
                r.batchSize(),
                r.prefillMs(),
                r.prefillTokensPerS(),
                r.decodeMedianMs(),
                r.decodeTokensPerS(),
                r.totalLatencyMs(),
                r.totalOutputTokensPerS(),
                r.totalTokensPerS());
          }
          System.out.println(TOTAL_NOTE);
          if (!draftTokens.isEmpty()) {
            System.out.printf(
                "%6s %6s %12s %14s %12s %14s%n",
                "batch", "K", "verify", "verify", "repeating", "repeating");
            System.out.printf(
                "%6s %6s %12s %14s %12s %14s%n",
                "", "", "ms", "decode steps", "ms", "decode steps");
            for (var r : results) {
              for (var v : r.verify()) {
                System.out.printf(
                    "%6d %6d %12.2f %14.2f %12.2f %14.2f%n",
                    r.batchSize(),
                    v.draftTokens(),
                    v.medianMs(),
                    v.decodeSteps(),
                    v.repeatMedianMs(),
                    v.repeatDecodeSteps());
              }
            }
            System.out.println(VERIFY_NOTE);
          }
          rooflineText.forEach(System.out::println);
          System.out.println(warmup.describe());
        }
        if (history != null) {
          BenchmarkHistory.append(
              history,
              "one-batch",
              "ringmaster bench one-batch "
                  + engine.describe()
                  + (profile ? " --profile" : "")
                  + (sharedPrefix ? " --shared-prefix" : "")
                  + " --batch-size "
                  + batchSizes.stream().map(String::valueOf).collect(Collectors.joining(","))
                  + " --input-len "
                  + inputLen
                  + " --output-len "
                  + outputLen
                  + (draftTokens.isEmpty()
                      ? ""
                      : " --speculative-num-draft-tokens "
                          + draftTokens.stream()
                              .map(String::valueOf)
                              .collect(Collectors.joining(",")))
                  + " --warmup-rounds "
                  + warmupRounds
                  + " --warmup-decode-steps "
                  + warmupDecodeSteps,
              node,
              "none (absolute figures)",
              engine.historyMachine());
        }
      }
      return 0;
    }

    /**
     * On a GPU the simulator has a profile for, the run's decode and prefill rooflines and the
     * share of each it reached ({@code OneBatchRoofline}), added to {@code node} as {@code
     * roofline} and returned as lines of text; empty elsewhere. A model the simulator cannot
     * describe gets a line saying so, and the benchmark's figures stand.
     */
    static List<String> roofline(
        Path dir,
        com.fasterxml.jackson.databind.node.ObjectNode node,
        ObjectMapper m,
        List<dev.ringmaster.engine.bench.OneBatchBenchmark.Result> results,
        String device,
        int tpSize,
        int epSize) {
      var plan = node.get("memory_plan");
      String gpu = plan == null || plan.get("gpu") == null ? null : plan.get("gpu").asText();
      var profile = dev.ringmaster.sim.calibrate.OneBatchRoofline.profileFor(gpu);
      if (profile.isEmpty()) {
        return List.of();
      }
      var hw = profile.get();
      List<dev.ringmaster.sim.calibrate.OneBatchRoofline.Row> rows;
      String weights;
      try {
        @SuppressWarnings("unchecked")
        java.util.Map<String, Object> planMap = m.convertValue(plan, java.util.Map.class);
        var run =
            new dev.ringmaster.sim.calibrate.MeasurementFile.OneBatch(
                dir.toString(),
                device,
                tpSize,
                epSize,
                planMap,
                results,
                node.get("allreduce").asText(),
                node.has("moe_a2a_backend") ? node.get("moe_a2a_backend").asText() : null);
        var quant = dev.ringmaster.sim.calibrate.OneBatchSteps.quantOf(run);
        weights = quant.name();
        rows =
            dev.ringmaster.sim.calibrate.OneBatchRoofline.of(
                run, dev.ringmaster.sim.model.ModelShapes.load(dir), hw.gpu(), quant);
      } catch (RuntimeException e) {
        return List.of("roofline: not available for this model (" + e.getMessage() + ")");
      }
      var r = node.putObject("roofline");
      r.put("profile", hw.name());
      r.put("weights", weights);
      r.put("memory_bandwidth_tb_s", hw.gpu().memoryBandwidth() / 1e12);
      r.put("bf16_tflops", hw.gpu().flopsFor("bf16") / 1e12);
      r.set("rows", m.valueToTree(rows));
      List<String> lines = new java.util.ArrayList<>();
      lines.add(
          String.format(
              java.util.Locale.ROOT,
              "roofline per rank (%s profile, datasheet: %.1f TB/s, %.1f bf16 TFLOPS; %s weights):",
              hw.name(),
              hw.gpu().memoryBandwidth() / 1e12,
              hw.gpu().flopsFor("bf16") / 1e12,
              weights));
      lines.add(
          String.format(
              "%6s %12s %12s %7s %12s %7s",
              "batch", "decode GB", "decode", "share", "prefill", "share"));
      lines.add(
          String.format("%6s %12s %12s %7s %12s %7s", "", "per step", "tok/s", "", "tok/s", ""));
      for (var row : rows) {
        lines.add(
            String.format(
                java.util.Locale.ROOT,
                "%6d %12.2f %12.0f %6.0f%% %12.0f %6.0f%%",
                row.batchSize(),
                row.decodeGb(),
                row.decodeTokensPerS(),
                100 * row.decodeShare(),
                row.prefillTokensPerS(),
                100 * row.prefillShare()));
      }
      return lines;
    }
  }
}
