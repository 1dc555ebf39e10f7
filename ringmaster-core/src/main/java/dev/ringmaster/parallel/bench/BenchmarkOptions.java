package dev.ringmaster.parallel.bench;

import dev.ringmaster.parallel.AllReduceAlgorithm;
import dev.ringmaster.parallel.CollectiveOp;
import dev.ringmaster.parallel.LocalWorldConfig;
import java.util.List;
import java.util.Objects;

/**
 * What a collective benchmark runs.
 *
 * @param worldSize number of ranks
 * @param op the operation ({@code BARRIER} is not benchmarked)
 * @param algorithms the allreduce algorithms to compare (ignored for other operations, which have
 *     one algorithm)
 * @param minBytes smallest message, in nccl-tests terms (see {@link BenchmarkResult#bytes()})
 * @param maxBytes largest message; sizes double from {@code minBytes}
 * @param warmupIterations untimed iterations per size
 * @param iterations timed iterations per size and trial; each trial's median is taken
 * @param chunkElements ring pipeline chunk, in floats
 * @param trials passes over every size and algorithm; the smallest of the trials' medians is
 *     reported, since what spoils a trial on a shared host (other processes, a descheduled rank)
 *     only ever adds time
 */
public record BenchmarkOptions(
    int worldSize,
    CollectiveOp op,
    List<AllReduceAlgorithm> algorithms,
    long minBytes,
    long maxBytes,
    int warmupIterations,
    int iterations,
    int chunkElements,
    int trials) {

  /** Validates the options. */
  public BenchmarkOptions {
    Objects.requireNonNull(op, "op");
    algorithms = List.copyOf(algorithms);
    if (worldSize < 1) {
      throw new IllegalArgumentException("world size must be positive: " + worldSize);
    }
    if (op == CollectiveOp.BARRIER) {
      throw new IllegalArgumentException("a barrier moves no data; nothing to benchmark");
    }
    if (op == CollectiveOp.ALL_REDUCE && algorithms.isEmpty()) {
      throw new IllegalArgumentException("no allreduce algorithm given");
    }
    if (minBytes < 4 || maxBytes < minBytes || maxBytes > (1L << 31)) {
      throw new IllegalArgumentException(
          "need 4 <= minBytes <= maxBytes <= 2 GiB, got " + minBytes + ", " + maxBytes);
    }
    if (warmupIterations < 0 || iterations < 1 || chunkElements < 1 || trials < 1) {
      throw new IllegalArgumentException("bad iteration counts, trials or chunk size");
    }
  }

  /** Options of a single trial (the median over {@code iterations} is reported). */
  public BenchmarkOptions(
      int worldSize,
      CollectiveOp op,
      List<AllReduceAlgorithm> algorithms,
      long minBytes,
      long maxBytes,
      int warmupIterations,
      int iterations,
      int chunkElements) {
    this(
        worldSize,
        op,
        algorithms,
        minBytes,
        maxBytes,
        warmupIterations,
        iterations,
        chunkElements,
        1);
  }

  /**
   * nccl-tests-like defaults: 256 B to 16 MiB, 5 warm-up and 20 timed iterations, one trial, every
   * concrete allreduce algorithm plus AUTO.
   */
  public static BenchmarkOptions defaults(int worldSize, CollectiveOp op) {
    return new BenchmarkOptions(
        worldSize,
        op,
        List.of(
            AllReduceAlgorithm.RING,
            AllReduceAlgorithm.ONESHOT,
            AllReduceAlgorithm.TWOSHOT,
            AllReduceAlgorithm.RECURSIVE_DOUBLING,
            AllReduceAlgorithm.AUTO),
        256,
        16 << 20,
        5,
        20,
        LocalWorldConfig.DEFAULT_CHUNK_ELEMENTS);
  }

  /** These options with another size range. */
  public BenchmarkOptions withBytes(long min, long max) {
    return new BenchmarkOptions(
        worldSize, op, algorithms, min, max, warmupIterations, iterations, chunkElements, trials);
  }

  /** These options with other iteration counts. */
  public BenchmarkOptions withIterations(int warmup, int timed) {
    return new BenchmarkOptions(
        worldSize, op, algorithms, minBytes, maxBytes, warmup, timed, chunkElements, trials);
  }

  /** These options with other allreduce algorithms. */
  public BenchmarkOptions withAlgorithms(List<AllReduceAlgorithm> algos) {
    return new BenchmarkOptions(
        worldSize,
        op,
        algos,
        minBytes,
        maxBytes,
        warmupIterations,
        iterations,
        chunkElements,
        trials);
  }

  /** These options with another number of trials. */
  public BenchmarkOptions withTrials(int n) {
    return new BenchmarkOptions(
        worldSize,
        op,
        algorithms,
        minBytes,
        maxBytes,
        warmupIterations,
        iterations,
        chunkElements,
        n);
  }
}
