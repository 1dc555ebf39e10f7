package dev.ringmaster.cli;

import dev.ringmaster.tools.benchserve.BenchServeConfig;
import dev.ringmaster.tools.tune.Objective;
import dev.ringmaster.tools.tune.TuneConfig;
import dev.ringmaster.tools.tune.TuneReport;
import dev.ringmaster.tools.tune.TuneSpace;
import dev.ringmaster.tools.tune.Tuner;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code ringmaster tune}: runs a grid of {@code serve} configurations as isolated trials under a
 * {@code bench serve} load and reports the fastest with its launch command.
 */
@Command(
    name = "tune",
    mixinStandardHelpOptions = true,
    description =
        "Run every point of a grid of serve flags as its own server process under a bench serve"
            + " load, record each result and failure (evidence.jsonl), rank them (report.md) and"
            + " print the winner's launch command. Flags after -- go to every trial's serve.")
final class TuneCommand implements Callable<Integer> {
  @Option(names = "--model", description = "Model directory (default: the embedded model).")
  Path model;

  @Option(
      names = "--space",
      required = true,
      paramLabel = "NAME=V1,V2",
      description =
          "A dimension, repeatable: a serve flag (--max-running-requests=8,32;"
              + " true/false for switches such as --disable-cuda-graph) or a kernel option"
              + " (cpu-threads=1,2 is sent as --kernel-option cpu-threads=1).")
  List<String> space;

  @Option(
      names = "--out",
      defaultValue = "tune-out",
      description = "Folder of evidence.jsonl, report.md and the logs (default: ${DEFAULT-VALUE}).")
  Path out;

  @Option(
      names = "--resume",
      description = "Continue from the evidence file in --out, skipping recorded trials.")
  boolean resume;

  @Option(
      names = "--dry-run",
      description = "List the trials and their server commands; run nothing.")
  boolean dryRun;

  @Option(
      names = "--startup-timeout",
      defaultValue = "300",
      description = "Seconds a server may take to listen (default: ${DEFAULT-VALUE}).")
  int startupTimeout;

  @Option(
      names = "--run-timeout",
      defaultValue = "600",
      description = "Seconds one benchmark run (one repeat) may take (default: ${DEFAULT-VALUE}).")
  int runTimeout;

  @Option(
      names = "--dataset-name",
      defaultValue = "random",
      description = "random or random-ids (bench serve's datasets; default: ${DEFAULT-VALUE}).")
  String datasetName;

  @Option(
      names = "--num-prompts",
      defaultValue = "64",
      description = "Requests per trial (default: ${DEFAULT-VALUE}).")
  int numPrompts;

  @Option(
      names = "--random-input-len",
      defaultValue = "512",
      description = "Prompt tokens (default: ${DEFAULT-VALUE}).")
  int inputLen;

  @Option(
      names = "--random-output-len",
      defaultValue = "128",
      description = "Output tokens (default: ${DEFAULT-VALUE}).")
  int outputLen;

  @Option(
      names = "--random-range-ratio",
      defaultValue = "1.0",
      description = "Lengths uniform in [len x ratio, len] (default: ${DEFAULT-VALUE}).")
  double rangeRatio;

  @Option(
      names = "--max-concurrency",
      description = "Requests in flight at most (default: no limit).")
  Integer maxConcurrency;

  @Option(
      names = "--request-rate",
      defaultValue = "inf",
      description = "Requests per second, Poisson (default: all at once).")
  String requestRate;

  @Option(names = "--seed", defaultValue = "1", description = "Dataset and arrivals seed.")
  long seed;

  @Option(
      names = "--repeats",
      defaultValue = "3",
      description =
          "Benchmark runs per trial against its server; the objective is their median and the"
              + " noise their range (default: ${DEFAULT-VALUE}).")
  int repeats;

  @Option(
      names = "--objective",
      paramLabel = "throughput|goodput|latency",
      description =
          "What trials are ranked by: output tok/s, output tok/s of the requests meeting the SLOs,"
              + " or median end-to-end latency (lower is better; set --max-concurrency)."
              + " Default: goodput with an SLO, else throughput.")
  String objective;

  @Option(
      names = "--slo-ttft-ms",
      description = "A request meets the SLO only with a time to first token at most this.")
  Double sloTtftMs;

  @Option(
      names = "--slo-tpot-ms",
      description = "A request meets the SLO only with a time per output token at most this.")
  Double sloTpotMs;

  @Parameters(paramLabel = "SERVE_FLAG", description = "Flags every trial's serve gets, after --.")
  List<String> fixed = new ArrayList<>();

  @Override
  public Integer call() throws Exception {
    TuneSpace s;
    try {
      s = TuneSpace.parse(space);
    } catch (IllegalArgumentException e) {
      throw new UserError(e.getMessage());
    }
    FlagChecks.atLeast("--startup-timeout", startupTimeout, 1);
    FlagChecks.atLeast("--run-timeout", runTimeout, 1);
    FlagChecks.atLeast("--num-prompts", numPrompts, 1);
    FlagChecks.atLeast("--repeats", repeats, 1);
    Objective obj;
    try {
      Objective.Kind kind =
          objective != null
              ? Objective.Kind.parse(objective)
              : sloTtftMs != null || sloTpotMs != null
                  ? Objective.Kind.GOODPUT
                  : Objective.Kind.THROUGHPUT;
      obj = new Objective(kind, sloTtftMs, sloTpotMs);
    } catch (IllegalArgumentException e) {
      throw new UserError(e.getMessage());
    }
    if (!datasetName.equals("random") && !datasetName.equals("random-ids")) {
      throw new UserError("--dataset-name must be random or random-ids, got " + datasetName);
    }
    double rate;
    try {
      rate = requestRate.equals("inf") ? Double.POSITIVE_INFINITY : Double.parseDouble(requestRate);
    } catch (NumberFormatException e) {
      throw new UserError("--request-rate must be a number or inf, got " + requestRate);
    }
    Path dir = DefaultModel.resolve(model);
    TuneConfig cfg =
        new TuneConfig(
            childJava(),
            dir,
            fixed,
            s,
            new TuneConfig.Workload(
                new BenchServeConfig.Dataset(
                    datasetName,
                    null,
                    numPrompts,
                    null,
                    null,
                    inputLen,
                    outputLen,
                    rangeRatio,
                    new BenchServeConfig.SharedPrefix(64, 16, 2048, 128, 256, 0.0)),
                new BenchServeConfig.Load(rate, maxConcurrency, 1, seed, false, false, null, true)),
            Duration.ofSeconds(startupTimeout),
            Duration.ofSeconds(runTimeout),
            out,
            obj,
            repeats);
    if (dryRun) {
      Tuner.dryRun(cfg).forEach(System.out::println);
      return 0;
    }
    if (Files.exists(cfg.evidence()) && !resume) {
      throw new UserError(
          cfg.evidence() + " exists: pass --resume to continue that tune, or choose another --out");
    }
    TuneReport report = Tuner.run(cfg, System.err);
    System.out.print(report.markdown());
    System.err.println("tune: evidence " + cfg.evidence() + ", report " + out.resolve("report.md"));
    return report.winnerCommand() == null ? 1 : 0;
  }

  /**
   * This JVM's command for a fresh CLI process: the same java, its module and memory options, the
   * same class path and the CLI's main class.
   */
  static List<String> childJava() {
    List<String> c = new ArrayList<>();
    c.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    for (String a : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
      if (a.startsWith("--add-modules")
          || a.startsWith("--enable-native-access")
          || a.startsWith("-X")
          || a.startsWith("-Dringmaster.")) {
        c.add(a);
      }
    }
    if (c.stream().noneMatch(a -> a.startsWith("--add-modules"))) {
      c.add("--add-modules=jdk.incubator.vector");
    }
    if (c.stream().noneMatch(a -> a.startsWith("--enable-native-access"))) {
      c.add("--enable-native-access=ALL-UNNAMED");
    }
    c.add("-cp");
    c.add(System.getProperty("java.class.path"));
    c.add(Main.class.getName());
    return c;
  }
}
