package dev.ringmaster.cli;

import dev.ringmaster.backend.cpu.CpuKernels;
import dev.ringmaster.model.arch.CausalLm;
import dev.ringmaster.model.arch.LanguageModel;
import dev.ringmaster.model.arch.ParallelCausalLm;
import dev.ringmaster.model.arch.ParallelConfig;
import dev.ringmaster.parallel.AllReduceAlgorithm;
import java.nio.file.Path;
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
      description = "none or all-to-all (default: ${DEFAULT-VALUE}).")
  String a2aBackend;

  @Option(
      names = "--allreduce",
      defaultValue = "auto",
      description = "auto, ring, oneshot, twoshot (default: ${DEFAULT-VALUE}).")
  String allreduce;

  @Option(names = "--cpu-threads", description = "CPU kernel threads (default: all cores).")
  Integer cpuThreads;

  @Option(
      names = "--cpu-vector-bits",
      description = "CPU vector width: 128, 256, 512 or 0 for the CPU's preferred width.")
  Integer cpuVectorBits;

  /** The parallel layout the flags describe. */
  ParallelConfig parallel() {
    int tp = tpSize == 1 && epSize > 1 ? epSize : tpSize;
    return new ParallelConfig(tp, epSize, ParallelConfig.MoeA2aBackend.parse(a2aBackend));
  }

  /** Opens the model on the selected device and layout. */
  LanguageModel open(Path dir) {
    if (!device.equals("cpu") && !device.equals("auto")) {
      throw new UserError(
          "--device " + device + ": only the CPU backend is available in this build (use cpu)");
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
    AllReduceAlgorithm algo;
    try {
      algo = AllReduceAlgorithm.valueOf(allreduce.toUpperCase(Locale.ROOT).replace("-", "_"));
    } catch (IllegalArgumentException e) {
      throw new UserError("--allreduce must be auto, ring, oneshot or twoshot, got " + allreduce);
    }
    return ParallelCausalLm.load(dir, p, algo);
  }
}
