package dev.ringmaster.cli;

import dev.ringmaster.backend.cpu.CpuKernels;
import dev.ringmaster.cuda.CudaProbe;
import dev.ringmaster.cuda.CudaRuntime;
import dev.ringmaster.cuda.collective.DeviceWorld;
import dev.ringmaster.cuda.model.CudaCausalLm;
import dev.ringmaster.cuda.model.CudaModelOptions;
import dev.ringmaster.cuda.model.TensorParallelCudaLm;
import dev.ringmaster.model.arch.CausalLm;
import dev.ringmaster.model.arch.LanguageModel;
import dev.ringmaster.model.arch.ParallelCausalLm;
import dev.ringmaster.model.arch.ParallelConfig;
import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.model.config.ModelConfigParser;
import dev.ringmaster.parallel.AllReduceAlgorithm;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import picocli.CommandLine.Option;

/** Engine flags shared by the commands that run a model (names as in SGLang). */
final class EngineOptions {
  @Option(
      names = "--device",
      defaultValue = "cpu",
      description = "auto, cpu or cuda (default: ${DEFAULT-VALUE}).")
  String device;

  @Option(names = "--tp-size", defaultValue = "1", description = "Tensor-parallel ranks.")
  int tpSize;

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

  @Option(names = "--cpu-threads", description = "CPU kernel threads (default: all cores).")
  Integer cpuThreads;

  @Option(
      names = "--cpu-vector-bits",
      description = "CPU vector width: 128, 256, 512 or 0 for the CPU's preferred width.")
  Integer cpuVectorBits;

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
          "Most prompt tokens run in one step (default: 8192 on the GPU, 512 when serving on the"
              + " CPU).")
  Integer chunkedPrefillSize;

  /** {@code --chunked-prefill-size}, or {@code def} when not given. */
  int chunkedPrefillSize(int def) {
    return chunkedPrefillSize != null ? chunkedPrefillSize : def;
  }

  @Option(
      names = "--max-total-tokens",
      description = "GPU: cap on the KV cache's tokens (default: as many as memory allows).")
  Integer maxTotalTokens;

  /** The device the model runs on: cpu or cuda ("auto" resolved, after {@link #open}). */
  String resolvedDevice;

  /** The parallel layout the flags describe. */
  ParallelConfig parallel() {
    int tp = tpSize == 1 && epSize > 1 ? epSize : tpSize;
    return new ParallelConfig(tp, epSize, ParallelConfig.MoeA2aBackend.parse(a2aBackend));
  }

  /** Opens the model on the selected device and layout. */
  LanguageModel open(Path dir) {
    resolvedDevice = resolveDevice(dir);
    if (resolvedDevice.equals("cuda")) {
      return openCuda(dir);
    }
    if (cpuThreads != null) {
      CpuKernels.setThreads(cpuThreads);
    }
    if (cpuVectorBits != null) {
      CpuKernels.setVectorBits(cpuVectorBits);
    }
    ParallelConfig p = parallel();
    if (p.tpSize() == 1) {
      return CausalLm.load(dir);
    }
    return ParallelCausalLm.load(dir, p, allReduceAlgorithm());
  }

  private AllReduceAlgorithm allReduceAlgorithm() {
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
        if (p.tpSize() > 1) {
          // The layout is a property of the model and the flags: say what does not divide first.
          try {
            TensorParallelCudaLm.check(ModelConfigParser.parse(dir), p, 1, p.tpSize());
          } catch (IllegalArgumentException e) {
            throw new UserError(e.getMessage());
          }
        }
        CudaProbe probe = CudaRuntime.probe();
        if (!probe.available()) {
          throw new UserError("--device cuda: " + probe.reason());
        }
        if (p.tpSize() > probe.devices().size()) {
          throw new UserError(
              "--device cuda --tp-size "
                  + p.tpSize()
                  + " needs "
                  + p.tpSize()
                  + " GPUs, "
                  + probe.devices().size()
                  + " visible");
        }
        return "cuda";
      }
      case "auto" -> {
        ParallelConfig p = parallel();
        CudaProbe probe = CudaRuntime.probe();
        if (!probe.available() || probe.devices().size() < p.tpSize()) {
          return "cpu";
        }
        ModelConfig cfg = ModelConfigParser.parse(dir);
        try {
          TensorParallelCudaLm.check(cfg, p, 1, probe.devices().size());
          return "cuda";
        } catch (IllegalArgumentException | IllegalStateException e) {
          return "cpu"; // not MLA, or a layout the GPU path does not run
        }
      }
      default -> throw new UserError("--device must be auto, cpu or cuda, got " + device);
    }
  }

  private LanguageModel openCuda(Path dir) {
    ParallelConfig p = parallel();
    AllReduceAlgorithm algo = allReduceAlgorithm();
    CudaModelOptions d = CudaModelOptions.defaults();
    CudaModelOptions o;
    try {
      o =
          new CudaModelOptions(
              d.device(),
              memFractionStatic,
              cudaGraphMaxBs,
              cudaGraphBs,
              disableCudaGraph,
              chunkedPrefillSize(8192),
              maxTotalTokens,
              d.blockSize(),
              d.gemvMaxTokens(),
              d.moeGroupedMinTokens());
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
