package dev.ringmaster.tools.tune;

import dev.ringmaster.tools.doctor.Doctor;
import dev.ringmaster.tools.doctor.DoctorTarget;
import dev.ringmaster.tools.doctor.FeatureCheck;
import dev.ringmaster.tools.doctor.GpuFacts;
import dev.ringmaster.tools.doctor.HostFacts;
import dev.ringmaster.tools.doctor.ModelNeeds;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * Rules out a point that needs a feature {@code doctor} says is unsupported on this host: the
 * verdicts are computed for the point's own configuration (its TP and EP sizes, all-to-all, chunk,
 * graph size and memory fraction), and only the features the point uses count. {@code untested}
 * features do not rule a point out: running it is how they get tested. On a GPU point the model's
 * checks count too: its architecture on the CUDA backend and whether its weights, workspace, graphs
 * and one sequence's KV (at the point's {@code --context-length}, else the model's) fit.
 */
public final class DoctorPruning implements PointCheck {
  private final HostFacts host;
  private final GpuFacts gpu;
  private final boolean withModel;

  /**
   * Verdicts from these facts (probed once by the caller).
   *
   * @param withModel whether GPU points are also held to the model checks of the tune's model
   */
  public DoctorPruning(HostFacts host, GpuFacts gpu, boolean withModel) {
    this.host = host;
    this.gpu = gpu;
    this.withModel = withModel;
  }

  /** Whether any point of the tune uses a feature doctor judges (else nothing to probe). */
  public static boolean needsDoctor(TuneConfig config) {
    return config.space().grid().stream()
        .anyMatch(t -> !requiredFeatures(TrialFlags.of(config, t)).isEmpty());
  }

  @Override
  public String cause() {
    return "doctor";
  }

  @Override
  public Optional<String> reject(TuneConfig config, Trial trial) {
    TrialFlags f = TrialFlags.of(config, trial);
    List<String> needed = requiredFeatures(f);
    if (needed.isEmpty()) {
      return Optional.empty();
    }
    DoctorTarget target;
    try {
      target = target(f);
    } catch (IllegalArgumentException e) {
      return Optional.empty(); // a bad value is serve's to refuse, with its own message
    }
    ModelNeeds model = null;
    if (withModel && needed.contains("cuda-device")) {
      try {
        model = ModelNeeds.of(config.model(), target);
        needed.addAll(List.of("model-architecture", "model-gpu-memory"));
      } catch (RuntimeException e) {
        model = null; // a model doctor cannot describe: the device checks still count
      }
    }
    Map<String, FeatureCheck> checks =
        Doctor.check(host, gpu, target, model).stream()
            .collect(Collectors.toMap(FeatureCheck::feature, Function.identity()));
    for (String feature : needed) {
      FeatureCheck c = checks.get(feature);
      if (c != null
          && (c.verdict() == dev.ringmaster.tools.doctor.Verdict.UNSUPPORTED_HARDWARE
              || c.verdict() == dev.ringmaster.tools.doctor.Verdict.UNSUPPORTED_SOFTWARE)) {
        return Optional.of(feature + " " + c.verdict().label() + ": " + c.reason());
      }
    }
    return Optional.empty();
  }

  /**
   * The doctor features a configuration uses: on {@code --device cuda} the device, kernels and
   * cuBLAS, CUDA graphs unless {@code --disable-cuda-graph}, PDL with {@code pdl=true}, the
   * allreduce of {@code --allreduce} above TP 1, expert all-to-all with {@code --moe-a2a-backend
   * all-to-all} above EP 1, GPUs across nodes with {@code --nnodes} above 1. The CPU engine's
   * features are always there; {@code --device auto} picks what the host has.
   */
  static List<String> requiredFeatures(TrialFlags f) {
    List<String> out = new ArrayList<>();
    if (!f.get("--device", "cpu").equals("cuda")) {
      return out;
    }
    out.addAll(List.of("cuda-device", "gpu-kernels", "cublas"));
    if (!f.on("--disable-cuda-graph")) {
      out.add("cuda-graphs");
    }
    if (f.kernel("pdl", "false").equals("true")) {
      out.add("pdl");
    }
    int tp = safeInt(f, "--tp-size", "--tp");
    int ep = safeInt(f, "--ep-size", "--ep");
    if (tp > 1) {
      String algo = f.get("--allreduce", "auto").toLowerCase(Locale.ROOT);
      out.add(
          switch (algo) {
            case "oneshot", "twoshot", "fused" -> "allreduce-" + algo;
            default -> "allreduce-nccl";
          });
    }
    if (ep > 1 && f.get("--moe-a2a-backend", "none").equals("all-to-all")) {
      out.add("expert-all-to-all");
    }
    if (safeInt(f, "--nnodes", null) > 1) {
      out.add("multi-node-gpu");
    }
    return out;
  }

  private static int safeInt(TrialFlags f, String name, String alias) {
    try {
      return f.intValue(name, alias, 1);
    } catch (IllegalArgumentException e) {
      return 1;
    }
  }

  private static DoctorTarget target(TrialFlags f) {
    double memFraction;
    try {
      memFraction = Double.parseDouble(f.get("--mem-fraction-static", "0"));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(e);
    }
    return new DoctorTarget(
        f.intValue("--tp-size", "--tp", 1),
        f.intValue("--ep-size", "--ep", 1),
        f.get("--moe-a2a-backend", "none").equals("all-to-all"),
        f.intValue("--chunked-prefill-size", null, 8192),
        f.intValue("--context-length", null, 0),
        f.on("--disable-cuda-graph") ? 0 : f.intValue("--cuda-graph-max-bs", null, 160),
        memFraction);
  }
}
