package dev.ringmaster.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ringmaster.cuda.CudaProbe;
import dev.ringmaster.cuda.CudaRuntime;
import dev.ringmaster.cuda.bench.DeviceCollectiveBench;
import dev.ringmaster.cuda.collective.AllReduceTableCache;
import dev.ringmaster.cuda.collective.AllReduceTuner;
import dev.ringmaster.cuda.collective.DeviceWorld;
import dev.ringmaster.cuda.nccl.DistInit;
import dev.ringmaster.parallel.AllReduceAlgorithm;
import dev.ringmaster.parallel.CollectiveOp;
import dev.ringmaster.parallel.bench.BenchmarkOptions;
import dev.ringmaster.parallel.bench.BenchmarkResult;
import dev.ringmaster.parallel.bench.BusBandwidthPlot;
import dev.ringmaster.parallel.bench.CollectiveBenchmark;
import dev.ringmaster.runtime.KernelTuning;
import dev.ringmaster.util.PngSupport;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code ringmaster bench collectives}: like nccl-tests, time (median over iterations; on the CPU
 * the smallest of several trials' medians), algbw and busbw per algorithm and message size, each
 * result checked.
 */
@Command(
    name = "collectives",
    mixinStandardHelpOptions = true,
    description =
        "Benchmark collective algorithms (median time, on the CPU the smallest median of several"
            + " trials; algbw, busbw with nccl-tests' factors).")
final class CollectivesBenchCommand implements Callable<Integer> {
  /**
   * Trials of a CPU run: in-process ranks share the host's cores with everything else on it, so one
   * pass can be disturbed throughout (docs/simulate.md has the repeatability this buys).
   */
  static final int DEFAULT_CPU_TRIALS = 3;

  @Option(
      names = "--device",
      defaultValue = "cpu",
      description =
          "cpu (in-process ranks) or cuda (NCCL and peer-memory kernels, one thread per GPU).")
  String device;

  @Mixin DistributedOptions dist = new DistributedOptions();

  @Option(
      names = "--no-tune",
      description = "cuda: skip measuring (or loading) the table --allreduce auto uses.")
  boolean noTune;

  @Option(names = "--world-size", defaultValue = "2", description = "Ranks.")
  int worldSize;

  @Option(
      names = "--op",
      defaultValue = "allreduce",
      description = "allreduce, allgather, reducescatter, alltoall or broadcast.")
  String op;

  @Option(
      names = "--algorithms",
      split = ",",
      description =
          "Allreduce algorithms (default cpu: ring,oneshot,twoshot,recursive_doubling,auto;"
              + " cuda: nccl,oneshot,twoshot,fused,auto).")
  List<String> algorithms;

  @Option(names = "--min-bytes", defaultValue = "256", description = "Smallest message.")
  long minBytes;

  @Option(names = "--max-bytes", defaultValue = "16777216", description = "Largest message.")
  long maxBytes;

  @Option(names = "--iters", defaultValue = "20", description = "Timed iterations per size.")
  int iterations;

  @Option(
      names = "--trials",
      description =
          "cpu: trials of every point, at least this many (default 3), up to four times as many"
              + " while its two smallest trial medians differ by more than 10%%; reported: the"
              + " smallest trial median another trial confirms. cuda: 1 (the median of the"
              + " iterations).")
  Integer trials;

  @Option(
      names = "--cuda-graph",
      description =
          "cuda: replay each timed batch of collectives from one CUDA graph per rank, as decode"
              + " steps run them (default: launched one by one from the host, as nccl-tests does).")
  boolean cudaGraph;

  @Option(
      names = "--from-json",
      description =
          "Read results printed by an earlier --json run instead of measuring (e.g. to draw"
              + " --plot on a machine with a display toolkit).")
  Path fromJson;

  @Option(names = "--json", description = "Print the results as JSON.")
  boolean json;

  @Option(names = "--plot", description = "Write a PNG of busbw against size.")
  Path plot;

  @Option(names = "--history", description = "Append the results to this history file (JSONL).")
  Path history;

  @Override
  public Integer call() throws Exception {
    if (!device.equals("cpu") && !device.equals("cuda")) {
      throw new UserError("--device must be cpu or cuda, got " + device);
    }
    if (plot != null && !PngSupport.available()) {
      throw new UserError(
          "--plot: "
              + PngSupport.missingReason()
              + ", or measure with --json here and draw with --from-json elsewhere");
    }
    CollectiveOp collective =
        switch (op.toLowerCase(Locale.ROOT).replace("-", "").replace("_", "")) {
          case "allreduce" -> CollectiveOp.ALL_REDUCE;
          case "allgather" -> CollectiveOp.ALL_GATHER;
          case "reducescatter" -> CollectiveOp.REDUCE_SCATTER;
          case "alltoall" -> CollectiveOp.ALL_TO_ALL;
          case "broadcast" -> CollectiveOp.BROADCAST;
          default -> throw new UserError("--op: unknown collective '" + op + "'");
        };
    if (fromJson != null && history != null) {
      throw new UserError("--from-json measures nothing: record the run that measured it instead");
    }
    BenchmarkOptions d = BenchmarkOptions.defaults(worldSize, collective);
    boolean cuda = device.equals("cuda");
    List<AllReduceAlgorithm> algos =
        algorithms == null
            ? (cuda ? DeviceCollectiveBench.defaultAlgorithms() : d.algorithms())
            : algorithms.stream()
                .map(a -> AllReduceAlgorithm.valueOf(a.toUpperCase(Locale.ROOT).replace("-", "_")))
                .toList();
    int n = trials != null ? trials : cuda ? 1 : DEFAULT_CPU_TRIALS;
    if (cuda && n != 1) {
      throw new UserError("--trials: the cuda benchmark runs one trial (median of --iters)");
    }
    BenchmarkOptions o =
        new BenchmarkOptions(
            worldSize,
            collective,
            algos,
            minBytes,
            maxBytes,
            d.warmupIterations(),
            iterations,
            d.chunkElements(),
            n);
    List<BenchmarkResult> results =
        fromJson != null
            ? CollectiveBenchmark.fromJson(java.nio.file.Files.readString(fromJson))
            : cuda ? runOnGpus(o) : CollectiveBenchmark.run(o);
    String js = CollectiveBenchmark.toJson(results);
    System.out.println(json ? js : CollectiveBenchmark.formatTable(results));
    if (plot != null) {
      BusBandwidthPlot.write(results, plot);
      System.err.println("wrote " + plot);
    }
    if (history != null) {
      BenchmarkHistory.append(
          history,
          "collectives",
          "ringmaster bench collectives --device "
              + device
              + " --world-size "
              + worldSize
              + " --op "
              + op
              + " --min-bytes "
              + minBytes
              + " --max-bytes "
              + maxBytes
              + " --iters "
              + iterations
              + (cuda ? (cudaGraph ? " --cuda-graph" : "") : " --trials " + n),
          new ObjectMapper().readTree(js),
          "naive reference sum (results checked); busbw uses nccl-tests' factors",
          cuda && fromJson == null ? GpuMachine.describe(worldSize) : java.util.Map.of());
    }
    return results.stream().allMatch(BenchmarkResult::correct) ? 0 : 1;
  }

  /** The GPU benchmark: this node's share of the ranks, tuned AUTO table, then every point. */
  private List<BenchmarkResult> runOnGpus(BenchmarkOptions o) {
    DistInit init = dist.distInit();
    if (worldSize % init.nnodes() != 0) {
      throw new UserError(
          "--world-size " + worldSize + " is not a multiple of --nnodes " + init.nnodes());
    }
    int local = worldSize / init.nnodes();
    AllReduceAlgorithm algorithm = dist.algorithm();
    CudaProbe probe = CudaRuntime.probe();
    if (!probe.available()) {
      throw new UserError("--device cuda: " + probe.reason());
    }
    DeviceWorld.Options wo =
        new DeviceWorld.Options(
            local,
            init,
            algorithm,
            dist.disableCustomAllReduce,
            8 << 20,
            Duration.ofSeconds(dist.nodes.distTimeoutSeconds),
            KernelTuning.defaults().pdl());
    try (DeviceWorld world = DeviceWorld.create(wo)) {
      System.err.print(world.topology().format());
      world.log().forEach(l -> System.err.println("world: " + l));
      if (!noTune) {
        AllReduceTuner.tuneOrLoad(world, AllReduceTableCache.standard(), System.err);
      }
      return DeviceCollectiveBench.run(world, o, cudaGraph);
    }
  }
}
