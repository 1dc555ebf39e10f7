package dev.ringmaster.cli;

import dev.ringmaster.backend.cpu.model.CausalLm;
import dev.ringmaster.backend.cpu.model.ParallelCausalLm;
import dev.ringmaster.cuda.CudaProbe;
import dev.ringmaster.cuda.CudaRuntime;
import dev.ringmaster.cuda.collective.DeviceWorld;
import dev.ringmaster.cuda.model.CudaCausalLm;
import dev.ringmaster.cuda.model.CudaModelOptions;
import dev.ringmaster.cuda.model.CudaNodeBackend;
import dev.ringmaster.cuda.model.TensorParallelCudaLm;
import dev.ringmaster.engine.EngineWarmup;
import dev.ringmaster.engine.batch.ServingDefaults;
import dev.ringmaster.model.arch.ParallelConfig;
import dev.ringmaster.model.arch.ShardPlan;
import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.model.config.ModelConfigParser;
import dev.ringmaster.model.multinode.CpuNodeBackend;
import dev.ringmaster.model.multinode.DistributedLm;
import dev.ringmaster.model.multinode.Fingerprint;
import dev.ringmaster.model.multinode.FollowerNode;
import dev.ringmaster.model.multinode.NodeBackend;
import dev.ringmaster.model.multinode.NodeLayout;
import dev.ringmaster.parallel.AllReduceAlgorithm;
import dev.ringmaster.runtime.KernelTuning;
import dev.ringmaster.runtime.LanguageModel;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import picocli.CommandLine.Option;

/** Engine flags shared by the commands that run a model (names as in SGLang). */
final class EngineOptions {
  @Option(
      names = "--device",
      defaultValue = "cpu",
      description = "auto, cpu or cuda (default: ${DEFAULT-VALUE}).")
  String device;

  @Option(
      names = "--tp-size",
      defaultValue = "1",
      description = "Tensor-parallel ranks (over all nodes: each node runs tp-size / nnodes).")
  int tpSize;

  @picocli.CommandLine.Mixin NodeOptions nodes = new NodeOptions();

  @Option(
      names = "--ep-size",
      defaultValue = "1",
      description = "Expert-parallel ranks (1, or equal to --tp-size; sets --tp-size when alone).")
  int epSize;

  @Option(
      names = "--moe-a2a-backend",
      defaultValue = "none",
      description =
          "none or all-to-all (needs --ep-size equal to --tp-size; default: ${DEFAULT-VALUE}).")
  String a2aBackend;

  @Option(
      names = "--allreduce",
      defaultValue = "auto",
      description =
          "auto, nccl, ring, oneshot, twoshot or fused (default: ${DEFAULT-VALUE}); on the CPU"
              + " nccl runs ring and fused runs oneshot.")
  String allreduce;

  @Option(
      names = "--disable-custom-all-reduce",
      description = "GPU: use NCCL for every allreduce (no peer-memory kernels).")
  boolean disableCustomAllReduce;

  @Option(
      names = "--cpu-threads",
      description =
          "CPU kernel threads (default: all cores); the same as --kernel-option cpu-threads=N.")
  Integer cpuThreads;

  @Option(
      names = "--cpu-vector-bits",
      description =
          "CPU vector width: 128, 256, 512 or 0 for the CPU's preferred width; the same as"
              + " --kernel-option cpu-vector-bits=N.")
  Integer cpuVectorBits;

  @Option(
      names = "--indexer-cache-dtype",
      paramLabel = "DTYPE",
      description =
          "DeepSeek Sparse Attention models (deepseek_v32, glm_moe_dsa): how the indexer key cache"
              + " stores its keys: auto (f32 on the CPU, bf16 on the GPU) or fp8_e4m3 (e4m3 codes"
              + " and one f32 scale per key, 132 bytes per token and indexed layer for 128-value"
              + " keys; the indexer queries are quantized alike, as DeepSeek-V3.2 does;"
              + " docs/numerics.md). Other models have no indexer cache. The same as"
              + " --kernel-option indexer-cache-dtype=DTYPE.")
  String indexerCacheDtype;

  @Option(
      names = "--cpu-warmup-steps",
      description =
          "CPU: after the model loads, run four 128-token prefills and this many decode steps"
              + " on scratch caches so the JIT has compiled the kernels before requests"
              + " (default: ${DEFAULT-VALUE}); 0 skips it.")
  int cpuWarmupSteps = EngineWarmup.DEFAULT_DECODE_STEPS;

  @Option(
      names = "--cpu-warmup-batch-size",
      description =
          "CPU: rows of the batched warm-up after the one-sequence warm-up: this many "
              + EngineWarmup.BATCH_PROMPT_TOKENS
              + "-token prompts prefilled in one step, then --cpu-warmup-steps decode steps of"
              + " all of them, so a first burst of concurrent requests finds the batched kernels"
              + " compiled (default: "
              + EngineWarmup.DEFAULT_BATCH_ROWS
              + " for serve, the CPU's default running batch; 1 for the other commands, which run"
              + " one sequence or warm up their own batches); 1 runs the one-sequence warm-up"
              + " only.")
  Integer cpuWarmupBatchSize;

  @Option(
      names = "--cpu-warmup-seconds",
      description =
          "CPU: after the fixed warm-up rounds, keep running short prefill and decode rounds"
              + " until the JIT compiler is idle, for at most this many seconds (default:"
              + " ${DEFAULT-VALUE}); 0 runs the fixed rounds only.")
  int cpuWarmupSeconds = EngineWarmup.DEFAULT_SETTLE_SECONDS;

  /** The batched warm-up's rows when {@code --cpu-warmup-batch-size} is not given. */
  private int cpuWarmupBatchDefault = 1;

  /** Options for {@code serve}: the batched CPU warm-up covers the default running batch. */
  static EngineOptions forServing() {
    EngineOptions o = new EngineOptions();
    o.cpuWarmupBatchDefault = EngineWarmup.DEFAULT_BATCH_ROWS;
    return o;
  }

  /** Rows of the batched CPU warm-up: the flag, or the command's default. */
  int cpuWarmupBatchSize() {
    return cpuWarmupBatchSize != null ? cpuWarmupBatchSize : cpuWarmupBatchDefault;
  }

  @Option(
      names = "--kernel-option",
      paramLabel = "KEY=VALUE",
      description =
          "A kernel choice, repeatable (keys, meanings and defaults are listed below); applied"
              + " after --kernel-config.")
  List<String> kernelOptions;

  @Option(
      names = "--kernel-config",
      paramLabel = "FILE.json",
      description =
          "Kernel choices from a JSON object of the keys listed below, e.g."
              + " {\"mla-fused-tokens\": 0, \"pdl\": false} (the kernel_tuning object of a --json"
              + " output reads back as one).")
  Path kernelConfig;

  /**
   * Set by {@code bench one-batch --profile}: the GPU model times one eager step per size by op
   * group.
   */
  boolean profile;

  private KernelTuning tuning;

  /**
   * The kernel choices of the flags: the defaults, then {@code --kernel-config}, then each {@code
   * --kernel-option}, then {@code --cpu-threads}, {@code --cpu-vector-bits} and {@code
   * --indexer-cache-dtype}. Fails with a {@link UserError} naming the bad key or value (before any
   * model loads: {@link #open} and {@link #follow} ask for it first).
   */
  KernelTuning tuning() {
    if (tuning == null) {
      try {
        KernelTuning t =
            kernelConfig != null
                ? KernelTuning.fromJsonFile(kernelConfig)
                : KernelTuning.defaults();
        t = t.withOptions(kernelOptions != null ? kernelOptions : List.of());
        if (cpuThreads != null) {
          t = t.with("cpu-threads", cpuThreads);
        }
        if (cpuVectorBits != null) {
          t = t.with("cpu-vector-bits", cpuVectorBits);
        }
        if (indexerCacheDtype != null) {
          try {
            t = t.with("indexer-cache-dtype", indexerCacheDtype);
          } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(
                "--indexer-cache-dtype must be auto or fp8_e4m3, got '" + indexerCacheDtype + "'",
                e);
          }
        }
        tuning = t;
      } catch (IllegalArgumentException e) {
        throw new UserError(e.getMessage());
      }
    }
    return tuning;
  }

  /**
   * Adds the list of kernel options ({@link KernelTuning#help}) to the help of every command of
   * {@code cl} that takes these flags.
   */
  static void addKernelOptionHelp(picocli.CommandLine cl) {
    var spec = cl.getCommandSpec();
    if (spec.findOption("--kernel-option") != null) {
      List<String> lines = new java.util.ArrayList<>();
      lines.add("");
      lines.add("Kernel options (--kernel-option KEY=VALUE, or keys of a --kernel-config object):");
      KernelTuning.help().lines().forEach(l -> lines.add(l.replace("%", "%%")));
      spec.usageMessage().footer(lines.toArray(String[]::new));
    }
    cl.getSubcommands().values().forEach(EngineOptions::addKernelOptionHelp);
  }

  @Option(
      names = "--mem-fraction-static",
      description =
          "GPU: share of GPU memory for weights plus KV cache (default: derived from the GPU's"
              + " memory as SGLang does).")
  Double memFractionStatic;

  @Option(
      names = "--cuda-graph-max-bs",
      description = "GPU: largest decode batch captured as a CUDA graph (default: by GPU memory).")
  Integer cudaGraphMaxBs;

  @Option(
      names = "--cuda-graph-bs",
      split = ",",
      description = "GPU: decode batch sizes to capture, e.g. 1,8,32,128 (default: a ladder).")
  List<Integer> cudaGraphBs;

  @Option(names = "--disable-cuda-graph", description = "GPU: run decode steps without graphs.")
  boolean disableCudaGraph;

  @Option(
      names = "--chunked-prefill-size",
      description =
          "Most prompt tokens run in one step. Default on the GPU by its memory, as SGLang: 2048"
              + " under 35 GiB, 4096 under 60 GiB, 8192 under 160 GiB, else 16384; "
              + ServingDefaults.CPU_CHUNKED_PREFILL_SIZE
              + " when serving on the CPU (measured with bench serve).")
  Integer chunkedPrefillSize;

  /** Checks the values of these flags before anything loads (exit status 2 when wrong). */
  void validate() {
    FlagChecks.atLeast("--tp-size", tpSize, 1);
    FlagChecks.atLeast("--ep-size", epSize, 1);
    FlagChecks.atLeast("--cpu-threads", cpuThreads, 1);
    FlagChecks.atLeast("--cpu-warmup-seconds", cpuWarmupSeconds, 0);
    if (cpuWarmupSteps < 0) {
      throw new UserError(
          "--cpu-warmup-steps must not be negative, got "
              + cpuWarmupSteps
              + " (0 skips the warm-up)");
    }
    if (cpuWarmupBatchSize() < 1) {
      throw new UserError(
          "--cpu-warmup-batch-size must be at least 1, got "
              + cpuWarmupBatchSize
              + " (1 warms up one sequence only; --cpu-warmup-steps 0 skips the warm-up)");
    }
    if (cpuVectorBits != null && !List.of(0, 128, 256, 512).contains(cpuVectorBits)) {
      throw new UserError("--cpu-vector-bits must be 0, 128, 256 or 512, got " + cpuVectorBits);
    }
    FlagChecks.fraction("--mem-fraction-static", memFractionStatic);
    FlagChecks.atLeast("--cuda-graph-max-bs", cudaGraphMaxBs, 1);
    if (cudaGraphBs != null) {
      for (int b : cudaGraphBs) {
        FlagChecks.atLeast("--cuda-graph-bs", b, 1);
      }
    }
    FlagChecks.atLeast("--chunked-prefill-size", chunkedPrefillSize, 1);
    FlagChecks.atLeast("--max-total-tokens", maxTotalTokens, 1);
    if (!List.of("auto", "cpu", "cuda").contains(device)) {
      throw new UserError("--device must be auto, cpu or cuda, got " + device);
    }
    allReduceAlgorithm();
    try {
      parallel();
    } catch (IllegalArgumentException e) {
      throw new UserError(e.getMessage());
    }
  }

  /** {@code --chunked-prefill-size}, or {@code def} when not given. */
  int chunkedPrefillSize(int def) {
    return chunkedPrefillSize != null ? chunkedPrefillSize : def;
  }

  /**
   * {@code --chunked-prefill-size}, or its default for the resolved device (after {@link #open}):
   * by GPU memory on the GPU, {@code cpuDefault} on the CPU.
   */
  int chunkedPrefillSizeForDevice(int cpuDefault) {
    if (chunkedPrefillSize != null) {
      return chunkedPrefillSize;
    }
    if ("cuda".equals(resolvedDevice) && gpuMemoryBytes > 0) {
      return ServingDefaults.gpuChunkedPrefillSize(gpuMemoryBytes);
    }
    return "cuda".equals(resolvedDevice) ? 8192 : cpuDefault;
  }

  /** Memory of the smallest visible GPU, once the probe ran (0 before or without one). */
  private long gpuMemoryBytes;

  private void noteGpuMemory(CudaProbe probe) {
    gpuMemoryBytes =
        probe.devices().stream()
            .mapToLong(dev.ringmaster.cuda.driver.DeviceInfo::totalMemory)
            .min()
            .orElse(0);
  }

  @Option(
      names = "--max-total-tokens",
      description = "GPU: cap on the KV cache's tokens (default: as many as memory allows).")
  Integer maxTotalTokens;

  /** The device the model runs on: cpu or cuda ("auto" resolved, after {@link #open}). */
  String resolvedDevice;

  /**
   * The machine fields of a history record of a run with these options: the local GPUs and NCCL on
   * the GPU (see {@link GpuMachine}), none on the CPU.
   */
  java.util.Map<String, String> historyMachine() {
    if (!"cuda".equals(resolvedDevice)) {
      return java.util.Map.of();
    }
    return GpuMachine.describe(Math.max(1, parallel().tpSize() / Math.max(1, nodes.nnodes)));
  }

  /** The parallel layout the flags describe. */
  ParallelConfig parallel() {
    int tp = tpSize == 1 && epSize > 1 ? epSize : tpSize;
    return new ParallelConfig(tp, epSize, ParallelConfig.MoeA2aBackend.parse(a2aBackend));
  }

  /**
   * Whether this process is a node other than 0 of a multi-node run: it then serves node 0 ({@link
   * #follow}) instead of running its command.
   */
  boolean follower() {
    return nodes.layout().nodeRank() > 0;
  }

  /**
   * Opens the model on the selected device and layout; on node 0 of a multi-node run, the model
   * that drives every node.
   */
  LanguageModel open(Path dir) {
    tuning();
    resolvedDevice = resolveDevice(dir);
    if (nodes.multiNode()) {
      NodeLayout layout = nodes.layout();
      return DistributedLm.lead(layout, fingerprint(dir), backend(dir, layout), System.err);
    }
    if (resolvedDevice.equals("cuda")) {
      return openCuda(dir);
    }
    ParallelConfig p = parallel();
    LanguageModel lm =
        p.tpSize() == 1
            ? CausalLm.load(dir, tuning())
            : ParallelCausalLm.load(dir, p, allReduceAlgorithm(), tuning());
    if (cpuWarmupSteps > 0) {
      try {
        System.err.println(
            EngineWarmup.run(
                    lm, cpuWarmupSteps, cpuWarmupBatchSize(), cpuWarmupSeconds, warmupVerifyTokens)
                .describe());
      } catch (RuntimeException e) {
        lm.close();
        throw e;
      }
    }
    return lm;
  }

  /**
   * A node other than 0: meets node 0, loads this node's ranks and runs node 0's steps until it
   * finishes; returns the exit status.
   */
  int follow(Path dir) {
    tuning();
    resolvedDevice = resolveDevice(dir);
    NodeLayout layout = nodes.layout();
    return FollowerNode.serve(layout, fingerprint(dir), backend(dir, layout), System.err);
  }

  /** This node's share of the ranks, checked before any node is contacted. */
  private NodeBackend backend(Path dir, NodeLayout layout) {
    ParallelConfig p = parallel();
    try {
      layout.localRanks(p.tpSize());
      ShardPlan.check(ModelConfigParser.parse(dir), p);
    } catch (IllegalArgumentException e) {
      throw new UserError(e.getMessage());
    }
    if (resolvedDevice.equals("cuda")) {
      return new CudaNodeBackend(
          dir,
          cudaOptions(),
          p,
          DeviceWorld.Options.of(p.tpSize() / layout.nnodes())
              .with(allReduceAlgorithm(), disableCustomAllReduce));
    }
    return new CpuNodeBackend(dir, p, allReduceAlgorithm(), tuning());
  }

  /**
   * The flags that shape the ranks and their steps, as a command line would give them (for
   * benchmark history records): device, nodes, parallelism, allreduce choice, on the GPU the
   * custom-allreduce switch, and the kernel options that differ from the defaults.
   */
  String describe() {
    ParallelConfig p = parallel();
    StringBuilder sb = new StringBuilder();
    sb.append("--device ").append(resolvedDevice != null ? resolvedDevice : device);
    if (nodes.nnodes > 1) {
      sb.append(" --nnodes ").append(nodes.nnodes);
    }
    sb.append(" --tp-size ").append(p.tpSize());
    if (p.epSize() > 1) {
      sb.append(" --ep-size ").append(p.epSize());
      sb.append(" --moe-a2a-backend ").append(p.a2a().cliName());
    }
    sb.append(" --allreduce ").append(allReduceAlgorithm().toString().toLowerCase(Locale.ROOT));
    if (disableCustomAllReduce) {
      sb.append(" --disable-custom-all-reduce");
    }
    String kernels = tuning().describe();
    if (!kernels.isEmpty()) {
      sb.append(' ').append(kernels);
    }
    return sb.toString();
  }

  /**
   * What every node must agree on: the model files (in {@link Fingerprint#of}), the flags that
   * shape the ranks and their steps, and every kernel choice.
   */
  Map<String, String> fingerprint(Path dir) {
    ParallelConfig p = parallel();
    Map<String, String> s = new LinkedHashMap<>();
    s.put("--device", resolvedDevice);
    s.put("--nnodes", String.valueOf(nodes.nnodes));
    s.put("--tp-size", String.valueOf(p.tpSize()));
    s.put("--ep-size", String.valueOf(p.epSize()));
    s.put("--moe-a2a-backend", p.a2a().toString());
    s.put("--allreduce", allReduceAlgorithm().toString());
    // One entry per kernel option, so that a refusal names the option that differs.
    tuning().toMap().forEach((k, v) -> s.put("--kernel-option " + k, String.valueOf(v)));
    if (resolvedDevice.equals("cuda")) {
      CudaModelOptions o = cudaOptions();
      s.put("--disable-custom-all-reduce", String.valueOf(disableCustomAllReduce));
      s.put("--mem-fraction-static", String.valueOf(o.memFractionStatic()));
      s.put("--cuda-graph-max-bs", String.valueOf(o.cudaGraphMaxBs()));
      s.put("--cuda-graph-bs", String.valueOf(o.cudaGraphBs()));
      s.put("--disable-cuda-graph", String.valueOf(o.disableCudaGraph()));
      s.put("--chunked-prefill-size", String.valueOf(o.chunkedPrefillSize()));
      s.put("--max-total-tokens", String.valueOf(o.maxTotalTokens()));
    }
    try {
      return Fingerprint.of(dir, s);
    } catch (java.io.UncheckedIOException e) {
      throw new UserError(e.getMessage());
    }
  }

  AllReduceAlgorithm allReduceAlgorithm() {
    try {
      return AllReduceAlgorithm.valueOf(allreduce.toUpperCase(Locale.ROOT).replace("-", "_"));
    } catch (IllegalArgumentException e) {
      throw new UserError(
          "--allreduce must be auto, nccl, ring, oneshot, twoshot or fused, got " + allreduce);
    }
  }

  /**
   * cpu, or cuda when asked for (failing at once, naming what does not divide when the layout
   * cannot split the model, else with the probe's reason when no usable GPU is there, or when fewer
   * GPUs than ranks are visible); auto takes cuda when the probe finds a GPU per rank and the model
   * runs there (MLA, one node).
   */
  private String resolveDevice(Path dir) {
    switch (device) {
      case "cpu" -> {
        return "cpu";
      }
      case "cuda" -> {
        ParallelConfig p = parallel();
        int nnodes = nodes.layout().nnodes();
        int local = p.tpSize() / nnodes;
        if (p.tpSize() > 1) {
          // The layout is a property of the model and the flags: say what does not divide first.
          try {
            TensorParallelCudaLm.check(ModelConfigParser.parse(dir), p, nnodes, p.tpSize());
          } catch (IllegalArgumentException e) {
            throw new UserError(e.getMessage());
          }
        }
        CudaProbe probe = CudaRuntime.probe();
        if (!probe.available()) {
          throw new UserError("--device cuda: " + probe.reason());
        }
        noteGpuMemory(probe);
        if (local > probe.devices().size()) {
          throw new UserError(
              "--device cuda --tp-size "
                  + p.tpSize()
                  + (nnodes > 1 ? " over " + nnodes + " nodes" : "")
                  + " needs "
                  + local
                  + (nnodes > 1 ? " GPUs per node, " : " GPUs, ")
                  + probe.devices().size()
                  + " visible");
        }
        return "cuda";
      }
      case "auto" -> {
        ParallelConfig p = parallel();
        int nnodes = nodes.layout().nnodes();
        CudaProbe probe = CudaRuntime.probe();
        if (!probe.available() || probe.devices().size() < p.tpSize() / nnodes) {
          return "cpu";
        }
        ModelConfig cfg = ModelConfigParser.parse(dir);
        try {
          TensorParallelCudaLm.check(cfg, p, nnodes, probe.devices().size());
          noteGpuMemory(probe);
          return "cuda";
        } catch (IllegalArgumentException | IllegalStateException e) {
          return "cpu"; // not MLA, or a layout the GPU path does not run
        }
      }
      default -> throw new UserError("--device must be auto, cpu or cuda, got " + device);
    }
  }

  /**
   * The GPU cache's block size when a command fixes it ({@code serve --page-size}: one scheduler
   * page is one GPU block); null keeps the GPU's default.
   */
  Integer cudaBlockSize;

  /**
   * Tokens of a speculative verify pass ({@code --speculative-num-draft-tokens} + 1) when a command
   * speculates, so the CPU warm-up compiles that shape too; 0 when it does not.
   */
  int warmupVerifyTokens;

  /** The GPU model settings the flags give. */
  private CudaModelOptions cudaOptions() {
    CudaModelOptions d = CudaModelOptions.defaults();
    try {
      return new CudaModelOptions(
          d.device(),
          memFractionStatic,
          cudaGraphMaxBs,
          cudaGraphBs,
          disableCudaGraph,
          chunkedPrefillSizeForDevice(8192),
          maxTotalTokens,
          cudaBlockSize != null ? cudaBlockSize : d.blockSize(),
          d.gemvMaxTokens(),
          d.moeGroupedMinTokens(),
          tuning(),
          profile);
    } catch (IllegalArgumentException e) {
      throw new UserError(e.getMessage());
    }
  }

  private LanguageModel openCuda(Path dir) {
    ParallelConfig p = parallel();
    AllReduceAlgorithm algo = allReduceAlgorithm();
    CudaModelOptions o = cudaOptions();
    try {
      if (p.tpSize() == 1) {
        return CudaCausalLm.load(dir, o);
      }
      return TensorParallelCudaLm.load(
          dir, o, p, DeviceWorld.Options.of(p.tpSize()).with(algo, disableCustomAllReduce));
    } catch (IllegalArgumentException | IllegalStateException e) {
      throw new UserError(e.getMessage());
    }
  }
}
