package dev.ringmaster.sim.calibrate;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ringmaster.engine.bench.OneBatchBenchmark;
import dev.ringmaster.model.config.QuantizationConfig;
import dev.ringmaster.model.config.QuantizationConfigParser;
import dev.ringmaster.sim.calibrate.Measurements.StepSample;
import dev.ringmaster.sim.hw.AllreduceAlgorithm;
import dev.ringmaster.sim.hw.HardwareProfile;
import dev.ringmaster.sim.model.Category;
import dev.ringmaster.sim.model.ModelShape;
import dev.ringmaster.sim.model.ModelShapes;
import dev.ringmaster.sim.model.QuantScheme;
import dev.ringmaster.sim.model.StepShape;
import dev.ringmaster.sim.model.WeightFormat;
import dev.ringmaster.sim.model.WeightInventory;
import dev.ringmaster.sim.serve.A2aBackend;
import dev.ringmaster.sim.serve.ForwardTime;
import dev.ringmaster.sim.serve.ForwardTimer;
import dev.ringmaster.sim.serve.ServingConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Turns {@code bench one-batch} runs into step samples. The benchmark reports only the median
 * decode step, so each step's GPU busy time and kernel count come from the simulator under a
 * profile (the calibrator passes the one already fitted to the other samples): what is left of the
 * measured step is launch and host overhead, and, where batch sizes differ, the per-token decode
 * latency. The weight formats are the checkpoint's ({@link #quantOf}). Assumed where the JSON is
 * silent: a bf16 KV cache, NCCL allreduce, no all-to-all ({@code moe_a2a_backend} says where a run
 * used it), a KV length of {@code input_len + output_len / 2} (the middle of the decode), and a
 * CUDA graph for exactly the batch sizes the memory plan lists graphs for.
 */
public final class OneBatchSteps {
  private OneBatchSteps() {}

  /** One step sample per batch size of {@code run}, predicted on {@code shape} under {@code hw}. */
  public static List<StepSample> samples(
      MeasurementFile.OneBatch run, ModelShape shape, HardwareProfile hw) {
    if (!"cuda".equals(run.device())) {
      throw new IllegalArgumentException(
          "bench one-batch ran on "
              + run.device()
              + ": only --device cuda runs say anything about a GPU profile");
    }
    ForwardTimer timer = new ForwardTimer(hw);
    WeightInventory inv = new WeightInventory(shape);
    List<StepSample> out = new ArrayList<>();
    QuantScheme quant = quantOf(run);
    for (OneBatchBenchmark.Result r : run.results()) {
      ServingConfig cfg = servingConfig(run, r, quant);
      ForwardTime ft =
          timer.time(
              inv,
              cfg,
              StepShape.decode(cfg.batch(), 1, cfg.contextLen(), cfg.kvDtype()),
              cfg.cudaGraph());
      // the roofline part only: launch and per-token latency are what the step fit explains
      double busy =
          ft.totalUs()
              - ft.breakdownUs().getOrDefault(Category.LAUNCH_OTHER, 0.0)
              - ft.breakdownUs().getOrDefault(Category.TOKEN_LATENCY, 0.0);
      out.add(
          new StepSample(
              cfg.batch(),
              cfg.contextLen(),
              cfg.cudaGraph(),
              ft.kernels(),
              busy,
              r.decodeMedianMs() * 1000,
              shape.numLayers(),
              hostUs(run, r)));
    }
    return out;
  }

  /**
   * Wall time less the profiled graph replay of the same step ({@code profile_ms}: "decode bs=N
   * (same step as a graph replay)"), microseconds; NaN unless one rank ran it (with several, the
   * replay timed on one rank includes its wait for the others) and the replay was profiled.
   */
  static double hostUs(MeasurementFile.OneBatch run, OneBatchBenchmark.Result r) {
    if (run.tpSize() != 1 || r.profileMs() == null) {
      return Double.NaN;
    }
    Map<String, Double> replay =
        r.profileMs().get("decode bs=" + r.batchSize() + " (same step as a graph replay)");
    Double total = replay == null ? null : replay.get("total");
    return total == null ? Double.NaN : r.decodeMedianMs() * 1000 - total * 1000;
  }

  /**
   * The allreduce a run used: its recorded peer kernel, else NCCL (also for {@code auto}, whose
   * measured table the simulator does not model, and for files that predate the field).
   */
  static AllreduceAlgorithm allreduceOf(MeasurementFile.OneBatch run) {
    String a = run.allreduce();
    return switch (a == null ? "" : a) {
      case "oneshot" -> AllreduceAlgorithm.ONESHOT;
      case "twoshot" -> AllreduceAlgorithm.TWOSHOT;
      case "fused" -> AllreduceAlgorithm.FUSED;
      default -> AllreduceAlgorithm.NCCL;
    };
  }

  /**
   * The weight formats of the checkpoint a run loaded: the method of its {@code config.json} {@code
   * quantization_config} (or ModelOpt's {@code hf_quant_config.json}), for the attention
   * projections and the routed experts apart as its exclusion list leaves them (checked for the
   * last layer's {@code self_attn.o_proj} and {@code mlp.experts.0.down_proj}); bf16 for an
   * unquantized checkpoint or where the run's model is not a readable directory.
   */
  public static QuantScheme quantOf(MeasurementFile.OneBatch run) {
    Path p = modelPath(run);
    if (p == null) {
      return QuantScheme.preset("bf16");
    }
    Path config = Files.isRegularFile(p) ? p : p.resolve("config.json");
    QuantizationConfig q;
    int layers;
    try {
      JsonNode root = new ObjectMapper().readTree(Files.readString(config));
      q =
          QuantizationConfigParser.parse(
              root, config.toString(), config.resolveSibling("hf_quant_config.json"));
      layers = root.path("num_hidden_layers").asInt(1);
    } catch (java.io.IOException | RuntimeException e) {
      return QuantScheme.preset("bf16");
    }
    WeightFormat format =
        switch (q.method()) {
          case NONE -> WeightFormat.BF16;
          case FP8_BLOCK, FP8_TENSOR -> WeightFormat.FP8;
          case NVFP4 -> WeightFormat.NVFP4;
        };
    String layer = "model.layers." + (layers - 1) + ".";
    WeightFormat experts =
        q.excludes(layer + "mlp.experts.0.down_proj") ? WeightFormat.BF16 : format;
    WeightFormat dense = q.excludes(layer + "self_attn.o_proj") ? WeightFormat.BF16 : format;
    String name =
        experts == dense
            ? experts.cliName()
            : experts.cliName() + "-experts+" + dense.cliName() + "-dense";
    return new QuantScheme(name, experts, dense);
  }

  /**
   * The run's {@code model} as a readable config file or model directory here; null where it names
   * neither (a description, or a directory on another machine).
   */
  private static Path modelPath(MeasurementFile.OneBatch run) {
    if (run.model() == null) {
      return null;
    }
    try {
      Path p = Path.of(run.model());
      return Files.isRegularFile(p) || Files.isRegularFile(p.resolve("config.json")) ? p : null;
    } catch (java.nio.file.InvalidPathException notAPath) {
      return null;
    }
  }

  /**
   * The configuration a one-batch result ran, as the simulator describes it, with the weight
   * formats {@code quant} ({@link #quantOf} of the run, read once for all its results).
   */
  public static ServingConfig servingConfig(
      MeasurementFile.OneBatch run, OneBatchBenchmark.Result r, QuantScheme quant) {
    boolean graphed = graphedBatches(run).contains(String.valueOf(r.batchSize()));
    return new ServingConfig(
        run.tpSize(),
        run.epSize(),
        "all-to-all".equals(run.moeA2aBackend()) ? A2aBackend.ALL_TO_ALL : A2aBackend.NONE,
        allreduceOf(run),
        quant,
        "bf16",
        r.batchSize(),
        r.inputLen() + r.outputLen() / 2,
        graphed,
        Math.max(1, r.batchSize()),
        8192,
        null);
  }

  /**
   * The model a run loaded: {@code override} where given, else the run's {@code model} path where
   * it names a readable config or model directory.
   *
   * @throws IllegalArgumentException when neither is available
   */
  public static ModelShape model(MeasurementFile.OneBatch run, Path override) {
    if (override != null) {
      return ModelShapes.load(override);
    }
    Path p = modelPath(run);
    if (p != null) {
      return ModelShapes.load(p);
    }
    throw new IllegalArgumentException(
        "bench one-batch model '"
            + run.model()
            + "' is not a readable model directory here: pass --model-config");
  }

  private static java.util.Set<String> graphedBatches(MeasurementFile.OneBatch run) {
    if (run.memoryPlan() != null
        && run.memoryPlan().get("cuda_graph_mb_per_bs") instanceof Map<?, ?> m) {
      java.util.Set<String> keys = new java.util.HashSet<>();
      m.keySet().forEach(k -> keys.add(String.valueOf(k)));
      return keys;
    }
    return java.util.Set.of();
  }
}
