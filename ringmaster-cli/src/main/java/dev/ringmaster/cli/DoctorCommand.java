package dev.ringmaster.cli;

import dev.ringmaster.cuda.collective.AllReduceTableCache;
import dev.ringmaster.tools.doctor.Doctor;
import dev.ringmaster.tools.doctor.DoctorReport;
import dev.ringmaster.tools.doctor.DoctorTarget;
import dev.ringmaster.tools.doctor.FeatureCheck;
import dev.ringmaster.tools.doctor.GpuFacts;
import dev.ringmaster.tools.doctor.HostFacts;
import dev.ringmaster.tools.doctor.ModelNeeds;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code ringmaster doctor}: what this host has and a verdict per engine feature; exit status 0
 * when every required feature (and with {@code --model} every model check) is {@code ok}, 1 when
 * not, 2 for bad flags.
 */
@Command(
    name = "doctor",
    mixinStandardHelpOptions = true,
    description =
        "Report the host (CPU, memory, Java; GPUs, driver, libraries, topology) and a verdict per"
            + " feature: ok | unsupported (hardware) | unsupported (software version) | untested."
            + " Exit status 0 when every --require feature and every --model check is ok, else 1.")
final class DoctorCommand implements Callable<Integer> {
  @Option(names = "--json", description = "Print the report as JSON.")
  boolean json;

  @Option(
      names = "--model",
      description = "Model directory: add its needs (weights, KV at the context length, graphs).")
  Path model;

  @Option(
      names = "--require",
      split = ",",
      description = "Features that must be ok for exit status 0, e.g. cuda-graphs,pdl.")
  List<String> require = List.of();

  @Option(names = "--tp-size", defaultValue = "1", description = "GPUs of tensor parallelism.")
  int tpSize;

  @Option(names = "--ep-size", defaultValue = "1", description = "GPUs of expert parallelism.")
  int epSize;

  @Option(
      names = "--moe-a2a-backend",
      defaultValue = "none",
      description = "none or all-to-all: size the all-to-all buffers (with --model).")
  String a2a;

  @Option(
      names = "--chunked-prefill-size",
      defaultValue = "8192",
      description = "Token budget of a step (default: ${DEFAULT-VALUE}).")
  int chunkedPrefillSize;

  @Option(
      names = "--context-length",
      defaultValue = "0",
      description = "KV length of one sequence (default: the model's max_position_embeddings).")
  int contextLength;

  @Option(
      names = "--cuda-graph-max-bs",
      defaultValue = "160",
      description = "Largest captured decode batch, 0 without graphs (default: ${DEFAULT-VALUE}).")
  int cudaGraphMaxBs;

  @Option(
      names = "--mem-fraction-static",
      description = "Share of GPU memory for the model (default: what is free).")
  Double memFractionStatic;

  @Option(
      names = "--measure",
      description =
          "Also run short benchmarks (copy bandwidth, operation cost, allreduce per algorithm"
              + " and size) and save a host profile; on GPUs the allreduce table --allreduce auto"
              + " reads.")
  boolean measure;

  @Option(
      names = "--profile-out",
      description =
          "Where --measure writes the host profile (default: host-profile.json in the cache"
              + " folder, ~/.cache/ringmaster).")
  Path profileOut;

  @Option(
      names = "--base-profile",
      description =
          "Profile --measure fits (default: cpu-host without a GPU, else the built-in profile of"
              + " the GPU's family: h200 (one GPU) or h200-x8, h100-sxm-x8, rtx-pro-6000-x8;"
              + " the H200's for other GPUs, with a note).")
  String baseProfile;

  @Override
  public Integer call() throws Exception {
    if (!a2a.equals("none") && !a2a.equals("all-to-all")) {
      throw new UserError("--moe-a2a-backend must be none or all-to-all, got " + a2a);
    }
    if (model != null && !Files.isRegularFile(model.resolve("config.json"))) {
      throw new UserError("--model " + model + ": no config.json there");
    }
    DoctorTarget target;
    try {
      target =
          new DoctorTarget(
              tpSize,
              epSize,
              a2a.equals("all-to-all"),
              chunkedPrefillSize,
              contextLength,
              cudaGraphMaxBs,
              memFractionStatic != null ? memFractionStatic : 0);
    } catch (IllegalArgumentException e) {
      throw new UserError(e.getMessage());
    }
    AllReduceTableCache cache = AllReduceTableCache.standard();
    HostFacts host = HostFacts.probe();
    GpuFacts gpu = CudaFactsProbe.probe(cache);
    ModelNeeds needs;
    try {
      needs = model == null ? null : ModelNeeds.of(model, target);
    } catch (RuntimeException e) {
      throw new UserError("--model " + model + ": " + e.getMessage());
    }
    List<String> measured = List.of();
    if (measure) {
      Path out =
          profileOut != null ? profileOut : cache.file(1).resolveSibling("host-profile.json");
      measured = DoctorMeasure.run(gpu, out, baseProfile, System.err);
      gpu = CudaFactsProbe.probe(cache); // the measured tables now count
    }
    List<FeatureCheck> checks = Doctor.check(host, gpu, target, needs);
    DoctorReport report = new DoctorReport(host, gpu, needs, checks, measured);
    List<FeatureCheck> failed;
    try {
      failed = report.failures(require);
    } catch (IllegalArgumentException e) {
      throw new UserError(e.getMessage());
    }
    System.out.print(json ? report.toJson(require) + "\n" : report.text());
    if (!json && !failed.isEmpty()) {
      System.out.println(
          "\nnot ok: " + String.join(", ", failed.stream().map(FeatureCheck::feature).toList()));
    }
    return failed.isEmpty() ? 0 : 1;
  }
}
