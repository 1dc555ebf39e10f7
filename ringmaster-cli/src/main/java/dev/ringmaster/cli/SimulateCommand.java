package dev.ringmaster.cli;

import dev.ringmaster.sim.calibrate.BenchServeAcceptance;
import dev.ringmaster.sim.hw.AllreduceAlgorithm;
import dev.ringmaster.sim.hw.HardwareProfile;
import dev.ringmaster.sim.hw.Profiles;
import dev.ringmaster.sim.model.ModelShape;
import dev.ringmaster.sim.model.ModelShapes;
import dev.ringmaster.sim.model.QuantScheme;
import dev.ringmaster.sim.model.WeightFormat;
import dev.ringmaster.sim.report.BarChartPng;
import dev.ringmaster.sim.report.PredictionText;
import dev.ringmaster.sim.serve.A2aBackend;
import dev.ringmaster.sim.serve.Prediction;
import dev.ringmaster.sim.serve.ServingConfig;
import dev.ringmaster.sim.serve.ServingSimulator;
import dev.ringmaster.sim.serve.Simulator;
import dev.ringmaster.sim.serve.SpecDecoding;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code ringmaster simulate}: predicts a serving configuration on hardware described by a profile
 * (built-in or calibrated), with a breakdown of where the time goes.
 */
@Command(
    name = "simulate",
    mixinStandardHelpOptions = true,
    description =
        "Predict decode speed, memory and KV capacity of a configuration on a hardware profile.",
    subcommands = {SimulateCalibrateCommand.class, SimulateCheckCommand.class})
final class SimulateCommand implements Callable<Integer> {
  /** Exit status of a configuration that cannot run on the profile (the reasons are printed). */
  static final int DOES_NOT_RUN = 3;

  @Option(names = "--model-config", description = "config.json of the model (required).")
  Path modelConfig;

  @Option(
      names = "--hardware",
      description =
          "(required) Built-in profile (h200, h200-x8, h100-sxm-x8, rtx-pro-6000-x8) or a file.")
  String hardware;

  @Option(
      names = {"--tp-size", "--tp"},
      defaultValue = "1",
      description = "Tensor parallel size.")
  int tp;

  @Option(
      names = {"--ep-size", "--ep"},
      defaultValue = "1",
      description = "Expert parallel size.")
  int ep;

  @Option(
      names = "--moe-a2a-backend",
      defaultValue = "none",
      description =
          "none | all-to-all (the engine's) | deepep (what-if: a DeepEP-style all-to-all the"
              + " engine does not have) | deepep-low-latency (the same what-if in low-latency mode for"
              + " every step, its buffers sized for the whole prefill chunk) (default"
              + " ${DEFAULT-VALUE}).")
  String a2a;

  @Option(
      names = "--allreduce",
      defaultValue = "nccl",
      description = "nccl | ring | oneshot | twoshot | fused (default ${DEFAULT-VALUE}).")
  String allreduce;

  @Option(
      names = "--quantization",
      defaultValue = "bf16",
      description = "bf16 | fp8 | nvfp4 (nvfp4: experts only) (default ${DEFAULT-VALUE}).")
  String quantization;

  @Option(
      names = "--dense-quantization",
      description = "Format of attention and dense MLP weights when it differs from the preset.")
  String denseQuantization;

  @Option(names = "--kv-cache-dtype", defaultValue = "bf16", description = "bf16 | fp8.")
  String kvDtype;

  @Option(names = "--batch-size", defaultValue = "1", description = "Concurrent sequences.")
  int batch;

  @Option(names = "--context-len", defaultValue = "4096", description = "KV length per sequence.")
  int contextLen;

  @Option(
      names = "--cuda-graph-max-bs",
      defaultValue = "512",
      description = "Largest captured batch size (default ${DEFAULT-VALUE}).")
  int cudaGraphMaxBs;

  @Option(names = "--disable-cuda-graph", description = "Decode without CUDA graphs.")
  boolean disableCudaGraph;

  @Option(
      names = "--chunked-prefill-size",
      defaultValue = "8192",
      description = "Prefill chunk in tokens (default ${DEFAULT-VALUE}).")
  int chunkedPrefill;

  @Option(names = "--speculative-algorithm", description = "EAGLE3 | MTP.")
  String specAlgorithm;

  @Option(names = "--speculative-num-steps", description = "Draft steps (default 3).")
  Integer specSteps;

  @Option(
      names = "--speculative-num-draft-tokens",
      description = "Tokens verified per sequence (default 4).")
  Integer specDraftTokens;

  @Option(
      names = "--speculative-eagle-topk",
      description = "Branching of each draft step (default: chain if it fits, else a tree).")
  Integer specTopK;

  @Option(
      names = "--speculative-accept-length",
      description = "Mean tokens kept per cycle, bonus token included (default 2.5).")
  Double specAccept;

  @Option(
      names = "--speculative-accept-per-position",
      split = ",",
      description =
          "Acceptance rate of the draft token at each position (non-increasing, 0..1), as the"
              + " engine's per-position statistics; the accept length is 1 plus their sum.")
  List<Double> specAcceptPerPosition;

  @Option(
      names = "--speculative-accept-from",
      description =
          "bench serve JSON lines (--output-file) of a speculative run: its accept_length is the"
              + " acceptance.")
  Path specAcceptFrom;

  @Option(
      names = "--speculative-verify",
      defaultValue = "eager",
      description =
          "eager (the engine's GPU verify steps: every collective launched by each rank's host)"
              + " | graph (draft and verify forwards replayed from captured CUDA graphs) (default"
              + " ${DEFAULT-VALUE}).")
  String specVerify;

  @Mixin SimulateServeOptions serve = new SimulateServeOptions();

  @Option(names = "--json", description = "Print the prediction as JSON.")
  boolean json;

  @Option(
      names = "--sweep",
      description =
          "PARAM=v1,v2,...: predict each value of batch-size, context-len, tp-size, ep-size,"
              + " allreduce, quantization, cuda-graph-max-bs, moe-a2a-backend,"
              + " speculative-num-draft-tokens, speculative-num-steps or speculative-accept-length.")
  String sweep;

  @Option(
      names = "--plot",
      defaultValue = "simulate-sweep.png",
      description = "PNG written by --sweep (default ${DEFAULT-VALUE}).")
  Path plot;

  @Override
  public Integer call() throws Exception {
    // Not picocli-required: the calibrate subcommand does not take them.
    if (modelConfig == null || hardware == null) {
      throw new UserError("simulate needs --model-config FILE and --hardware NAME|FILE");
    }
    ModelShape shape = ModelShapes.load(modelConfig);
    HardwareProfile hw = Profiles.load(hardware);
    Simulator sim = new Simulator(hw);
    if (serve.enabled()) {
      if (sweep != null) {
        throw new UserError(
            "--sweep predicts decode steps; it does not combine with --num-prompts");
      }
      return serve.run(shape, new ServingSimulator(hw), config(Map.of()), json);
    }
    if (sweep == null) {
      Prediction p = sim.predict(shape, config(Map.of()));
      System.out.print(
          json ? PredictionText.json(p) + System.lineSeparator() : PredictionText.text(p));
      return p.runs() ? 0 : DOES_NOT_RUN;
    }
    int eq = sweep.indexOf('=');
    if (eq < 1) {
      throw new UserError("--sweep expects PARAM=v1,v2,..., got '" + sweep + "'");
    }
    String param = sweep.substring(0, eq);
    List<String> values = List.of(sweep.substring(eq + 1).split(","));
    List<Prediction> preds = new ArrayList<>();
    for (String v : values) {
      preds.add(sim.predict(shape, config(Map.of(param, v))));
    }
    if (json) {
      System.out.println("[");
      for (int i = 0; i < preds.size(); i++) {
        System.out.print(PredictionText.json(preds.get(i)));
        System.out.println(i + 1 < preds.size() ? "," : "");
      }
      System.out.println("]");
    } else {
      printTable(param, values, preds);
    }
    Map<String, List<Double>> series = new LinkedHashMap<>();
    for (String term : preds.get(0).breakdownMs().keySet()) {
      series.put(term + " (ms/token)", new ArrayList<>());
    }
    for (Prediction p : preds) {
      double perStep = p.stepTimeMs() / p.perTokenMs();
      p.breakdownMs().forEach((k, v) -> series.get(k + " (ms/token)").add(v / perStep));
    }
    BarChartPng.write(
        plot,
        shape.modelType() + " on " + hw.name() + ": time per token by " + param,
        param,
        "ms per token (per stream)",
        values,
        series,
        true);
    System.err.println("plot written to " + plot);
    return preds.stream().allMatch(Prediction::runs) ? 0 : DOES_NOT_RUN;
  }

  private void printTable(String param, List<String> values, List<Prediction> preds) {
    System.out.printf(
        Locale.ROOT,
        "%-14s %10s %12s %12s %-13s %14s %10s%n",
        param,
        "step ms",
        "tok/s/strm",
        "tok/s total",
        "dominant",
        "KV tokens",
        "warnings");
    for (int i = 0; i < values.size(); i++) {
      Prediction p = preds.get(i);
      if (!p.runs()) {
        System.out.printf(
            Locale.ROOT,
            "%-14s does not run: %s%n",
            values.get(i),
            String.join("; ", p.doesNotRun()));
        continue;
      }
      System.out.printf(
          Locale.ROOT,
          "%-14s %10.3f %12.1f %12.1f %-13s %,14d %10d%n",
          values.get(i),
          p.stepTimeMs(),
          p.perStreamTokensPerS(),
          p.decodeTokensPerS(),
          p.dominant(),
          p.kvCapacityTokens(),
          p.warnings().size());
    }
  }

  /** The configuration from the options, with sweep overrides. */
  ServingConfig config(Map<String, String> overrides) {
    Map<String, String> o = new HashMap<>(overrides);
    int b = intOf(o, "batch-size", batch);
    int ctx = intOf(o, "context-len", contextLen);
    int t = intOf(o, "tp-size", tp);
    int e = intOf(o, "ep-size", ep);
    int maxBs = intOf(o, "cuda-graph-max-bs", cudaGraphMaxBs);
    String ar = o.containsKey("allreduce") ? o.remove("allreduce") : allreduce;
    String q = o.containsKey("quantization") ? o.remove("quantization") : quantization;
    String a = o.containsKey("moe-a2a-backend") ? o.remove("moe-a2a-backend") : a2a;
    boolean specGiven =
        specSteps != null
            || specDraftTokens != null
            || specAccept != null
            || specTopK != null
            || specAcceptPerPosition != null
            || specAcceptFrom != null
            || !specVerify.equals("eager")
            || o.keySet().stream().anyMatch(k -> k.startsWith("speculative-"));
    if (specAlgorithm == null && specGiven) {
      throw new UserError(
          "--speculative-* options need --speculative-algorithm EAGLE3|MTP; without it nothing"
              + " is speculated");
    }
    int steps = intOf(o, "speculative-num-steps", specSteps == null ? 3 : specSteps);
    int draft =
        intOf(o, "speculative-num-draft-tokens", specDraftTokens == null ? 4 : specDraftTokens);
    int given =
        (specAccept != null ? 1 : 0)
            + (specAcceptPerPosition != null ? 1 : 0)
            + (specAcceptFrom != null ? 1 : 0);
    if (given > 1) {
      throw new UserError(
          "give the acceptance once: --speculative-accept-length,"
              + " --speculative-accept-per-position or --speculative-accept-from");
    }
    double defaultAccept = specAccept == null ? 2.5 : specAccept;
    if (specAcceptFrom != null) {
      try {
        defaultAccept = BenchServeAcceptance.acceptLength(specAcceptFrom);
      } catch (IllegalArgumentException | java.io.UncheckedIOException ex) {
        throw new UserError("--speculative-accept-from: " + ex.getMessage());
      }
    }
    boolean sweptAccept = o.containsKey("speculative-accept-length");
    double accept = doubleOf(o, "speculative-accept-length", defaultAccept);
    if (!specVerify.equals("eager") && !specVerify.equals("graph")) {
      throw new UserError("--speculative-verify must be eager or graph, got '" + specVerify + "'");
    }
    if (!o.isEmpty()) {
      throw new UserError("--sweep: unknown parameter " + o.keySet());
    }
    QuantScheme scheme = QuantScheme.preset(q);
    if (denseQuantization != null) {
      scheme = scheme.withDense(WeightFormat.parse(denseQuantization));
    }
    SpecDecoding spec = null;
    if (specAlgorithm != null) {
      int topK = specTopK != null ? specTopK : SpecDecoding.defaultTopK(steps, draft);
      try {
        spec =
            new SpecDecoding(
                specAlgorithm.toUpperCase(Locale.ROOT),
                steps,
                draft,
                topK,
                accept,
                specVerify.equals("graph"),
                specAcceptPerPosition == null || sweptAccept ? List.of() : specAcceptPerPosition);
      } catch (IllegalArgumentException ex) {
        throw new UserError(ex.getMessage());
      }
    }
    return new ServingConfig(
        t,
        e,
        A2aBackend.parse(a),
        AllreduceAlgorithm.parse(ar),
        scheme,
        kvDtype,
        b,
        ctx,
        !disableCudaGraph,
        maxBs,
        chunkedPrefill,
        spec);
  }

  private static double doubleOf(Map<String, String> o, String key, double def) {
    String v = o.remove(key);
    if (v == null) {
      return def;
    }
    try {
      return Double.parseDouble(v.trim());
    } catch (NumberFormatException ex) {
      throw new UserError("--sweep " + key + ": '" + v + "' is not a number");
    }
  }

  private static int intOf(Map<String, String> o, String key, int def) {
    String v = o.remove(key);
    if (v == null) {
      return def;
    }
    try {
      return Integer.parseInt(v.trim());
    } catch (NumberFormatException ex) {
      throw new UserError("--sweep " + key + ": '" + v + "' is not an integer");
    }
  }
}
