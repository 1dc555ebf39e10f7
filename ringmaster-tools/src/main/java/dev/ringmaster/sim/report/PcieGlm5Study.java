package dev.ringmaster.sim.report;

import dev.ringmaster.sim.hw.AllreduceAlgorithm;
import dev.ringmaster.sim.hw.Profiles;
import dev.ringmaster.sim.model.ModelShape;
import dev.ringmaster.sim.model.ModelShapes;
import dev.ringmaster.sim.model.QuantScheme;
import dev.ringmaster.sim.serve.A2aBackend;
import dev.ringmaster.sim.serve.Prediction;
import dev.ringmaster.sim.serve.ServingConfig;
import dev.ringmaster.sim.serve.Simulator;
import dev.ringmaster.sim.serve.SpecDecoding;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The study behind docs/reports/rtx-pro-6000-x8-glm5.md: GLM-5 with NVFP4 experts at TP 8 on 8 PCIe
 * RTX PRO 6000 GPUs, one option changed at a time. Prints the markdown tables and writes the
 * breakdown plot. Run: {@code PcieGlm5Study configs/glm5.json docs/reports}.
 */
public final class PcieGlm5Study {
  private PcieGlm5Study() {}

  private record Row(String group, String label, ServingConfig cfg) {}

  /** Entry point: config.json path and output folder. */
  public static void main(String[] args) throws Exception {
    ModelShape glm5 = ModelShapes.load(Path.of(args[0]));
    Path out = Path.of(args[1]);
    Simulator sim = new Simulator(Profiles.load("rtx-pro-6000-x8"));
    List<Row> rows = new ArrayList<>();
    for (AllreduceAlgorithm ar : AllreduceAlgorithm.values()) {
      rows.add(new Row("allreduce", ar.cliName(), base(ar, 1, A2aBackend.NONE, 512, null)));
    }
    rows.add(
        new Row(
            "expert parallel",
            "ep 1 (TP experts)",
            base(AllreduceAlgorithm.NCCL, 1, A2aBackend.NONE, 512, null)));
    rows.add(
        new Row(
            "expert parallel",
            "ep 8, a2a none",
            base(AllreduceAlgorithm.NCCL, 8, A2aBackend.NONE, 512, null)));
    rows.add(
        new Row(
            "expert parallel",
            "ep 8, all-to-all",
            base(AllreduceAlgorithm.NCCL, 8, A2aBackend.ALL_TO_ALL, 512, null)));
    rows.add(
        new Row(
            "expert parallel",
            "ep 8, deepep (what-if)",
            base(AllreduceAlgorithm.NCCL, 8, A2aBackend.DEEPEP, 512, null)));
    rows.add(
        new Row(
            "cuda graphs",
            "max bs 512",
            base(AllreduceAlgorithm.NCCL, 1, A2aBackend.NONE, 512, null)));
    rows.add(
        new Row(
            "cuda graphs",
            "max bs 128",
            base(AllreduceAlgorithm.NCCL, 1, A2aBackend.NONE, 128, null)));
    rows.add(new Row("cuda graphs", "disabled", noGraph()));
    rows.add(
        new Row(
            "speculative", "off", base(AllreduceAlgorithm.NCCL, 1, A2aBackend.NONE, 128, null)));
    rows.add(
        new Row(
            "speculative",
            "EAGLE3 small: 3 steps, 4 tokens, accept 2.5, eager verify (the engine's)",
            base(
                AllreduceAlgorithm.NCCL,
                1,
                A2aBackend.NONE,
                128,
                new SpecDecoding("EAGLE3", 3, 4, 1, 2.5))));
    rows.add(
        new Row(
            "speculative",
            "EAGLE3 small, graph-captured verify",
            base(
                AllreduceAlgorithm.NCCL,
                1,
                A2aBackend.NONE,
                128,
                new SpecDecoding("EAGLE3", 3, 4, 1, 2.5).withVerifyGraphed(true))));
    rows.add(
        new Row(
            "speculative",
            "EAGLE3 large: 5 steps, topk 8, 32 tokens, accept 3.5, graph-captured",
            base(
                AllreduceAlgorithm.NCCL,
                1,
                A2aBackend.NONE,
                128,
                new SpecDecoding("EAGLE3", 5, 32, 8, 3.5).withVerifyGraphed(true))));
    rows.add(
        new Row(
            "speculative",
            "MTP: 3 steps, 4 tokens, accept 2.8, graph-captured",
            base(
                AllreduceAlgorithm.NCCL,
                1,
                A2aBackend.NONE,
                128,
                new SpecDecoding("MTP", 3, 4, 1, 2.8).withVerifyGraphed(true))));
    StringBuilder md = new StringBuilder();
    md.append(
        "| group | option | tok/s @ batch 1 | ms/token | dominant | weights | attention | moe | collectives | launch/other | tok/s total @ batch 32 | dominant @ 32 | KV tokens | seqs of 4096 |\n");
    md.append("|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---|---:|---:|\n");
    List<String> labels = new ArrayList<>();
    Map<String, List<Double>> series = new LinkedHashMap<>();
    for (Row r : rows) {
      Prediction p = sim.predict(glm5, r.cfg());
      Prediction p32 = sim.predict(glm5, r.cfg().withBatch(32));
      double perStep = p.stepTimeMs() / p.perTokenMs();
      if (!p.doesNotRun().isEmpty()) {
        // A configuration that does not run gets its reason, never a speed.
        md.append("| ").append(r.group()).append(" | ").append(r.label());
        md.append(" | does not run | | | | | | | | | | | |\n");
        for (String w : p.doesNotRun()) {
          md.append("|  | does not run: ")
              .append(w.replace("|", "/"))
              .append(" | | | | | | | | | | | | |\n");
        }
        continue;
      }
      md.append(
          String.format(
              Locale.ROOT,
              "| %s | %s | %.1f | %.2f | %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.0f | %s | %,d | %d |%n",
              r.group(),
              r.label(),
              p.perStreamTokensPerS(),
              p.perTokenMs(),
              p.dominant(),
              p.breakdownMs().get("weights") / perStep,
              p.breakdownMs().get("attention") / perStep,
              p.breakdownMs().get("moe") / perStep,
              p.breakdownMs().get("collectives") / perStep,
              p.breakdownMs().get("launch_other") / perStep,
              p32.decodeTokensPerS(),
              p32.dominant(),
              p.kvCapacityTokens(),
              p.maxBatchAtContext()));
      labels.add(r.group() + ": " + r.label().replaceAll(":.*", ""));
      p.breakdownMs()
          .forEach((k, v) -> series.computeIfAbsent(k, x -> new ArrayList<>()).add(v / perStep));
      for (String w : p.warnings()) {
        md.append("|  | ")
            .append("warning: ")
            .append(w.replace("|", "/"))
            .append(" | | | | | | | | | | | | |\n");
      }
    }
    System.out.print(md);
    BarChartPng.write(
        out.resolve("rtx-pro-6000-x8-glm5.png"),
        "GLM-5 NVFP4 experts, TP 8 on 8x RTX PRO 6000 (PCIe): ms per token at batch 1",
        "configuration",
        "ms per token",
        labels,
        series,
        true);
  }

  private static ServingConfig base(
      AllreduceAlgorithm ar, int ep, A2aBackend a2a, int maxBs, SpecDecoding spec) {
    return new ServingConfig(
        8, ep, a2a, ar, QuantScheme.preset("nvfp4"), "bf16", 1, 4096, true, maxBs, 8192, spec);
  }

  private static ServingConfig noGraph() {
    return new ServingConfig(
        8,
        1,
        A2aBackend.NONE,
        AllreduceAlgorithm.NCCL,
        QuantScheme.preset("nvfp4"),
        "bf16",
        1,
        4096,
        false,
        512,
        8192,
        null);
  }
}
