package dev.ringmaster.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ringmaster.parallel.AllReduceAlgorithm;
import dev.ringmaster.parallel.CollectiveOp;
import dev.ringmaster.parallel.bench.BenchmarkOptions;
import dev.ringmaster.parallel.bench.BenchmarkResult;
import dev.ringmaster.parallel.bench.BusBandwidthPlot;
import dev.ringmaster.parallel.bench.CollectiveBenchmark;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code ringmaster bench collectives}: like nccl-tests, time (median), algbw and busbw per
 * algorithm and message size, each result checked.
 */
@Command(
    name = "collectives",
    mixinStandardHelpOptions = true,
    description =
        "Benchmark collective algorithms (median time, algbw, busbw with nccl-tests' factors).")
final class CollectivesBenchCommand implements Callable<Integer> {
  @Option(names = "--device", defaultValue = "cpu", description = "cpu (in-process ranks).")
  String device;

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
      description = "Allreduce algorithms (default: ring,oneshot,twoshot,recursive_doubling,auto).")
  List<String> algorithms;

  @Option(names = "--min-bytes", defaultValue = "256", description = "Smallest message.")
  long minBytes;

  @Option(names = "--max-bytes", defaultValue = "16777216", description = "Largest message.")
  long maxBytes;

  @Option(names = "--iters", defaultValue = "20", description = "Timed iterations per size.")
  int iterations;

  @Option(names = "--json", description = "Print the results as JSON.")
  boolean json;

  @Option(names = "--plot", description = "Write a PNG of busbw against size.")
  Path plot;

  @Option(names = "--history", description = "Append the results to this history file (JSONL).")
  Path history;

  @Override
  public Integer call() throws Exception {
    if (!device.equals("cpu")) {
      throw new UserError(
          "--device " + device + ": only in-process CPU ranks are available in this build");
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
    BenchmarkOptions d = BenchmarkOptions.defaults(worldSize, collective);
    List<AllReduceAlgorithm> algos =
        algorithms == null
            ? d.algorithms()
            : algorithms.stream()
                .map(a -> AllReduceAlgorithm.valueOf(a.toUpperCase(Locale.ROOT).replace("-", "_")))
                .toList();
    BenchmarkOptions o =
        new BenchmarkOptions(
            worldSize,
            collective,
            algos,
            minBytes,
            maxBytes,
            d.warmupIterations(),
            iterations,
            d.chunkElements());
    List<BenchmarkResult> results = CollectiveBenchmark.run(o);
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
          "ringmaster bench collectives --device cpu --world-size " + worldSize + " --op " + op,
          new ObjectMapper().readTree(js),
          "naive reference sum (results checked); busbw uses nccl-tests' factors");
    }
    return results.stream().allMatch(BenchmarkResult::correct) ? 0 : 1;
  }
}
