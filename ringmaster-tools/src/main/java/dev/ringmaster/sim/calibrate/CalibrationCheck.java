package dev.ringmaster.sim.calibrate;

import dev.ringmaster.engine.bench.OneBatchBenchmark;
import dev.ringmaster.sim.calibrate.Measurements.CollectiveSample;
import dev.ringmaster.sim.calibrate.Measurements.KernelSample;
import dev.ringmaster.sim.calibrate.Measurements.StepSample;
import dev.ringmaster.sim.hw.AllreduceAlgorithm;
import dev.ringmaster.sim.hw.AlphaBeta;
import dev.ringmaster.sim.hw.CollectiveModel;
import dev.ringmaster.sim.hw.GpuSpec;
import dev.ringmaster.sim.hw.HardwareProfile;
import dev.ringmaster.sim.model.Category;
import dev.ringmaster.sim.model.ModelShape;
import dev.ringmaster.sim.model.OpCost;
import dev.ringmaster.sim.model.QuantScheme;
import dev.ringmaster.sim.serve.ForwardTimer;
import dev.ringmaster.sim.serve.Prediction;
import dev.ringmaster.sim.serve.Simulator;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * Predicted against measured for every measurement a profile can be checked on: each collective
 * point, each kernel and step sample, and each batch size of a {@code bench one-batch} run (decode
 * tokens per second, predicted by {@link Simulator} exactly as {@code simulate} would for that
 * configuration). Calibration is judged by this, on the fitted profile.
 *
 * @param profile name of the profile checked
 * @param rows one per measurement, in input order
 */
public record CalibrationCheck(String profile, List<Row> rows) {

  /** Copies the rows. */
  public CalibrationCheck {
    rows = List.copyOf(rows);
  }

  /**
   * One measurement beside its prediction.
   *
   * @param kind allreduce, alltoall, kernel, step or decode
   * @param what the measurement in words, e.g. {@code ring, 2 ranks, 1048576 B}
   * @param fields the measurement's identifying fields (snake_case, as the benchmark prints them)
   * @param unit us or tok/s
   * @param measured measured value
   * @param predicted predicted value; NaN where the profile has no model for it
   */
  public record Row(
      String kind,
      String what,
      Map<String, Object> fields,
      String unit,
      double measured,
      double predicted) {

    /** Signed error of the prediction in percent of the measurement (NaN when not predicted). */
    public double errorPct() {
      return (predicted - measured) / measured * 100;
    }

    /** Whether the profile predicted it. */
    public boolean predictedAtAll() {
      return !Double.isNaN(predicted);
    }
  }

  /** Largest absolute error in percent over the predicted rows (0 when there are none). */
  public double maxAbsErrorPct() {
    return rows.stream()
        .filter(Row::predictedAtAll)
        .mapToDouble(r -> Math.abs(r.errorPct()))
        .max()
        .orElse(0);
  }

  /** Largest absolute error in percent per kind, in first-seen order. */
  public Map<String, Double> maxAbsErrorPctByKind() {
    Map<String, Double> out = new LinkedHashMap<>();
    for (Row r : rows) {
      if (r.predictedAtAll()) {
        out.merge(r.kind(), Math.abs(r.errorPct()), Math::max);
      }
    }
    return out;
  }

  /** Checks {@code hw} against every measurement in {@code files}. */
  public static CalibrationCheck of(
      HardwareProfile hw,
      List<MeasurementFile> files,
      Function<MeasurementFile.OneBatch, ModelShape> models) {
    List<Row> rows = new ArrayList<>();
    for (MeasurementFile f : files) {
      switch (f) {
        case MeasurementFile.Native n -> {
          n.measurements().collectives().forEach(c -> rows.add(collective(hw, c)));
          n.measurements().kernels().forEach(k -> rows.add(kernel(hw.gpu(), k)));
          n.measurements().steps().forEach(s -> rows.add(step(hw.gpu(), s)));
        }
        case MeasurementFile.Collectives c ->
            BenchCollectives.samples(c.results()).forEach(s -> rows.add(collective(hw, s)));
        case MeasurementFile.OneBatch o -> rows.addAll(decode(hw, o, models.apply(o)));
      }
    }
    return new CalibrationCheck(hw.name(), rows);
  }

  private static Row collective(HardwareProfile hw, CollectiveSample c) {
    Map<String, Object> fields = new LinkedHashMap<>();
    fields.put("op", c.op());
    fields.put("algorithm", c.algorithm());
    if (c.protocol() != null) {
      fields.put("protocol", c.protocol());
    }
    fields.put("world_size", c.ranks());
    fields.put("bytes", (long) c.bytes());
    String what =
        c.algorithm()
            + (c.protocol() == null ? "" : "/" + c.protocol())
            + ", "
            + c.ranks()
            + " ranks, "
            + (long) c.bytes()
            + " B";
    return new Row(c.op(), what, fields, "us", c.timeUs(), predictCollective(hw, c));
  }

  private static double predictCollective(HardwareProfile hw, CollectiveSample c) {
    if (hw.collectives().host() != null) {
      // in-process ranks have nothing to fuse: fused runs one-shot
      String algo = c.algorithm().equals("fused") ? "oneshot" : c.algorithm();
      return c.op().equals("allreduce")
          ? hw.collectives().host().timeUs(algo, c.bytes(), c.ranks())
          : Double.NaN;
    }
    CollectiveModel cm = new CollectiveModel(hw);
    if (c.op().equals("alltoall")) {
      return cm.allToAll(c.bytes(), c.ranks()).timeUs();
    }
    if (!c.op().equals("allreduce")) {
      return Double.NaN;
    }
    String proto = c.protocol();
    boolean chosenByNccl = proto == null || BenchCollectives.AUTO.equalsIgnoreCase(proto);
    return switch (c.algorithm()) {
      case "nccl" ->
          chosenByNccl
              ? cm.allreduce(AllreduceAlgorithm.NCCL, c.bytes(), c.ranks()).timeUs()
              : ncclPair(hw, "ring/" + proto, c);
      case "ring", "tree" ->
          chosenByNccl
              ? cm.allreduce(AllreduceAlgorithm.RING, c.bytes(), c.ranks()).timeUs()
              : ncclPair(hw, c.algorithm() + "/" + proto, c);
      case "oneshot" -> cm.allreduce(AllreduceAlgorithm.ONESHOT, c.bytes(), c.ranks()).timeUs();
      case "twoshot" -> cm.allreduce(AllreduceAlgorithm.TWOSHOT, c.bytes(), c.ranks()).timeUs();
      case "fused" -> cm.allreduce(AllreduceAlgorithm.FUSED, c.bytes(), c.ranks()).timeUs();
      default -> Double.NaN;
    };
  }

  private static double ncclPair(HardwareProfile hw, String key, CollectiveSample c) {
    AlphaBeta ab = null;
    for (Map.Entry<String, AlphaBeta> e : hw.collectives().nccl().entrySet()) {
      if (e.getKey().equalsIgnoreCase(key)) {
        ab = e.getValue();
      }
    }
    if (ab == null) {
      return Double.NaN;
    }
    return ab.timeUs(
        CollectiveModel.allreduceSteps(key, c.ranks()),
        c.bytes() * 2.0 * (c.ranks() - 1) / c.ranks());
  }

  private static Row kernel(GpuSpec g, KernelSample k) {
    OpCost.Kind kind = k.kind().equals("attention") ? OpCost.Kind.ATTENTION : OpCost.Kind.GEMM;
    Category cat =
        switch (k.kind()) {
          case "moe" -> Category.MOE;
          case "attention" -> Category.ATTENTION;
          default -> Category.WEIGHTS;
        };
    OpCost op = new OpCost(k.name(), cat, kind, k.flops(), k.bytes(), k.dtype(), 1);
    Map<String, Object> fields = new LinkedHashMap<>();
    fields.put("name", k.name());
    fields.put("kind", k.kind());
    fields.put("dtype", k.dtype());
    return new Row(
        "kernel",
        k.name() + " (" + k.kind() + ", " + k.dtype() + ")",
        fields,
        "us",
        k.timeUs(),
        ForwardTimer.opTimeUs(g, op));
  }

  private static Row step(GpuSpec g, StepSample s) {
    double fixed =
        s.cudaGraph()
            ? g.graphLaunchUs() + g.stepOverheadUs() + s.kernels() * g.graphNodeUs()
            : g.stepOverheadUs() + s.kernels() * g.kernelLaunchUs();
    double predicted =
        s.gpuBusyUs() + fixed + g.decodeLatencyUs(s.batch(), s.contextLen(), s.layers());
    Map<String, Object> fields = new LinkedHashMap<>();
    fields.put("batch_size", s.batch());
    fields.put("context_len", s.contextLen());
    fields.put("cuda_graph", s.cudaGraph());
    fields.put("kernels", s.kernels());
    String what =
        "batch "
            + s.batch()
            + ", context "
            + s.contextLen()
            + (s.cudaGraph() ? ", graphed" : ", eager")
            + ", "
            + s.kernels()
            + " kernels";
    return new Row("step", what, fields, "us", s.stepTimeUs(), predicted);
  }

  private static List<Row> decode(HardwareProfile hw, MeasurementFile.OneBatch run, ModelShape m) {
    if (!"cuda".equals(run.device())) {
      throw new IllegalArgumentException(
          "bench one-batch ran on "
              + run.device()
              + ": only --device cuda runs check a GPU profile");
    }
    Simulator sim = new Simulator(hw);
    List<Row> out = new ArrayList<>();
    QuantScheme quant = OneBatchSteps.quantOf(run);
    for (OneBatchBenchmark.Result r : run.results()) {
      Prediction p = sim.predict(m, OneBatchSteps.servingConfig(run, r, quant));
      Map<String, Object> fields = new LinkedHashMap<>();
      fields.put("batch_size", r.batchSize());
      fields.put("input_len", r.inputLen());
      fields.put("output_len", r.outputLen());
      fields.put("decode_median_ms", r.decodeMedianMs());
      fields.put("predicted_decode_ms", p.stepTimeMs());
      String parallel =
          run.tpSize() > 1
              ? "TP "
                  + run.tpSize()
                  + (run.epSize() > 1 ? " EP " + run.epSize() : "")
                  + (run.allreduce() == null ? "" : " " + run.allreduce())
                  + ", "
              : "";
      if (run.tpSize() > 1) {
        fields.put("tp_size", run.tpSize());
        fields.put("allreduce", run.allreduce());
      }
      String what =
          parallel
              + "batch "
              + r.batchSize()
              + ", input "
              + r.inputLen()
              + ", output "
              + r.outputLen();
      out.add(new Row("decode", what, fields, "tok/s", r.decodeTokensPerS(), p.decodeTokensPerS()));
    }
    return out;
  }
}
