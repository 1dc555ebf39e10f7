package dev.ringmaster.cli;

import dev.ringmaster.cuda.collective.AllReduceTableCache;
import dev.ringmaster.sim.hw.HardwareProfile;
import dev.ringmaster.sim.hw.Profiles;
import dev.ringmaster.sim.model.ModelShape;
import dev.ringmaster.sim.model.ModelShapes;
import dev.ringmaster.tools.benchserve.BenchServeConfig;
import dev.ringmaster.tools.doctor.HostFacts;
import dev.ringmaster.tools.tune.DoctorPruning;
import dev.ringmaster.tools.tune.Objective;
import dev.ringmaster.tools.tune.PointCheck;
import dev.ringmaster.tools.tune.Pruning;
import dev.ringmaster.tools.tune.SimulatorJudge;
import dev.ringmaster.tools.tune.TrialExecutor;
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
            + " load (or, with --mode one-batch, as a bench one-batch process), record each result"
            + " and failure (evidence.jsonl), rank them (report.md) and print the winner's launch"
            + " command. Points that doctor or the simulator rule out are recorded as pruned and"
            + " not run. Flags after -- go to every trial.")
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
      names = "--warmup-requests",
      description =
          "Untimed requests sent together before each repeat (default: the workload's"
              + " concurrency, --max-concurrency or else --num-prompts, so a fresh server's batched"
              + " path is warm before the first timed run; 0 for none).")
  Integer warmupRequests;

  @Option(
      names = "--warmup-runs",
      defaultValue = "1",
      description =
          "Untimed whole runs of the workload against each trial's server before its repeats (a"
              + " fresh server's first run under the full load is slower than the next; default:"
              + " ${DEFAULT-VALUE}, 0 for none).")
  int warmupRuns;

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

  @Option(
      names = "--mode",
      defaultValue = "serve",
      paramLabel = "serve|one-batch",
      description =
          "serve: each trial a server under a bench serve load; one-batch: each trial an"
              + " engine-only bench one-batch process (default: ${DEFAULT-VALUE}).")
  String mode;

  @Option(
      names = "--batch-size",
      defaultValue = "1",
      description =
          "--mode one-batch: sequences in the static batch; the prompt and output lengths are"
              + " --random-input-len and --random-output-len (default: ${DEFAULT-VALUE}).")
  int batchSize;

  @Option(
      names = "--warmup-rounds",
      defaultValue = "4",
      description =
          "--mode one-batch: untimed rounds before the timed one (default: ${DEFAULT-VALUE}).")
  int warmupRounds;

  @Option(
      names = "--warmup-decode-steps",
      defaultValue = "64",
      description =
          "--mode one-batch: untimed decode steps per warm-up round (default: ${DEFAULT-VALUE}).")
  int warmupDecodeSteps;

  @Option(
      names = "--hardware",
      paramLabel = "NAME|FILE",
      description =
          "Hardware profile the simulator judges points on (a built-in name or a file): points"
              + " it says do not run are pruned, and --simulate-first ranks by it. Default: the"
              + " host profile doctor --measure wrote, where there is one.")
  String hardware;

  @Option(
      names = "--simulate-first",
      description =
          "Rank the points by the simulator's prediction of the objective and run only the best"
              + " --simulate-top; the rest are recorded as pruned with their predicted rank.")
  boolean simulateFirst;

  @Option(
      names = "--simulate-top",
      defaultValue = "3",
      description =
          "--simulate-first: how many of the best predicted points run (default: ${DEFAULT-VALUE}).")
  int simulateTop;

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
    FlagChecks.atLeast("--warmup-requests", warmupRequests, 0);
    FlagChecks.atLeast("--warmup-runs", warmupRuns, 0);
    if (!mode.equals("serve") && !mode.equals("one-batch")) {
      throw new UserError("--mode must be serve or one-batch, got " + mode);
    }
    boolean oneBatch = mode.equals("one-batch");
    Objective obj;
    TuneConfig.OneBatchWorkload batch = null;
    try {
      Objective.Kind kind =
          objective != null
              ? Objective.Kind.parse(objective)
              : oneBatch
                  ? Objective.Kind.DECODE
                  : sloTtftMs != null || sloTpotMs != null
                      ? Objective.Kind.GOODPUT
                      : Objective.Kind.THROUGHPUT;
      obj = new Objective(kind, sloTtftMs, sloTpotMs);
      if (oneBatch) {
        if (sloTtftMs != null || sloTpotMs != null) {
          throw new UserError(
              "--slo-ttft-ms and --slo-tpot-ms are bench serve figures; --mode one-batch has no"
                  + " requests to hold to them");
        }
        batch =
            new TuneConfig.OneBatchWorkload(
                batchSize, inputLen, outputLen, warmupRounds, warmupDecodeSteps);
      }
    } catch (IllegalArgumentException e) {
      throw new UserError(e.getMessage());
    }
    FlagChecks.atLeast("--simulate-top", simulateTop, 1);
    if (!datasetName.equals("random") && !datasetName.equals("random-ids")) {
      throw new UserError("--dataset-name must be random or random-ids, got " + datasetName);
    }
    double rate;
    try {
      rate = requestRate.equals("inf") ? Double.POSITIVE_INFINITY : Double.parseDouble(requestRate);
    } catch (NumberFormatException e) {
      throw new UserError("--request-rate must be a number or inf, got " + requestRate);
    }
    int warmup =
        warmupRequests != null
            ? warmupRequests
            : maxConcurrency != null ? Math.min(maxConcurrency, numPrompts) : numPrompts;
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
                // every repeat flushes the trial server's prefix cache: the repeats send the same
                // prompts, which a second run would otherwise find cached
                new BenchServeConfig.Load(
                    rate, maxConcurrency, warmup, seed, false, false, null, true, true),
                warmupRuns),
            Duration.ofSeconds(startupTimeout),
            Duration.ofSeconds(runTimeout),
            out,
            obj,
            repeats,
            batch);
    Pruning pruning = pruning(cfg, dir);
    if (dryRun) {
      Tuner.dryRun(cfg, pruning).forEach(System.out::println);
      return 0;
    }
    if (Files.exists(cfg.evidence()) && !resume) {
      throw new UserError(
          cfg.evidence() + " exists: pass --resume to continue that tune, or choose another --out");
    }
    TuneReport report = Tuner.run(cfg, pruning, TrialExecutor.of(cfg), System.err);
    System.out.print(report.markdown());
    System.err.println("tune: evidence " + cfg.evidence() + ", report " + out.resolve("report.md"));
    return report.winnerCommand() == null ? 1 : 0;
  }

  /**
   * The checks before running: doctor's verdicts (probed only when a point uses a GPU feature),
   * then the simulator's feasibility and, with {@code --simulate-first}, its ranking, on {@code
   * --hardware} or the host profile.
   */
  private Pruning pruning(TuneConfig cfg, Path dir) {
    List<PointCheck> checks = new ArrayList<>();
    List<String> notes = new ArrayList<>();
    if (DoctorPruning.needsDoctor(cfg)) {
      checks.add(
          new DoctorPruning(
              HostFacts.probe(), CudaFactsProbe.probe(AllReduceTableCache.standard()), true));
    }
    Path hostProfile = AllReduceTableCache.standard().file(1).resolveSibling("host-profile.json");
    String hw =
        hardware != null
            ? hardware
            : Files.isRegularFile(hostProfile) ? hostProfile.toString() : null;
    if (hw == null) {
      if (simulateFirst) {
        throw new UserError(
            "--simulate-first needs a hardware profile: give --hardware NAME|FILE (built in: "
                + String.join(", ", Profiles.BUILT_IN)
                + ") or measure this host with doctor --measure (writes "
                + hostProfile
                + ")");
      }
      notes.add(
          "The simulator's feasibility check was not made: no --hardware and no host profile at "
              + hostProfile
              + " (doctor --measure writes it).");
      return new Pruning(checks, null, simulateTop, notes);
    }
    HardwareProfile profile;
    try {
      profile = Profiles.load(hw);
    } catch (IllegalArgumentException e) {
      throw new UserError("--hardware: " + e.getMessage());
    }
    ModelShape shape;
    try {
      shape = ModelShapes.load(dir);
    } catch (RuntimeException e) {
      if (simulateFirst) {
        throw new UserError(
            "--simulate-first: the simulator cannot describe " + dir + ": " + e.getMessage());
      }
      notes.add(
          "The simulator's feasibility check was not made: it cannot describe "
              + dir
              + ": "
              + e.getMessage());
      return new Pruning(checks, null, simulateTop, notes);
    }
    SimulatorJudge judge = new SimulatorJudge(profile, shape);
    checks.add(judge);
    return new Pruning(checks, simulateFirst ? judge : null, simulateTop, notes);
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
