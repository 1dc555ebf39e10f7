package dev.ringmaster.parallel.bench;

import dev.ringmaster.parallel.AllReduceAlgorithm;
import dev.ringmaster.parallel.CollectiveOp;
import java.util.List;

/**
 * One measured point.
 *
 * @param op the operation
 * @param algorithm the allreduce algorithm, or null for operations with a single algorithm
 * @param worldSize number of ranks
 * @param bytes message size as nccl-tests counts it: the buffer for allreduce and broadcast, the
 *     whole gathered buffer for allgather, the whole input for reduce-scatter, a rank's whole send
 *     buffer for all-to-all
 * @param timeMicros time of one operation, microseconds, as {@code statistic} says (an iteration's
 *     time is its slowest rank's)
 * @param algBandwidthGBps bytes / time, in GB/s (10^9 bytes per second)
 * @param busBandwidthGBps algorithm bandwidth times {@link CollectiveOp#busBandwidthFactor}
 * @param correct whether every rank's result matched the expected values exactly
 * @param statistic how {@code timeMicros} summarises the iterations, e.g. "median of 20 iterations"
 *     or "smallest of 3-12 trial medians of 100 iterations confirmed within 10%"
 * @param trialMicros each trial's median, microseconds, in the order run (one entry, or empty where
 *     the benchmark does not run trials)
 */
public record BenchmarkResult(
    CollectiveOp op,
    AllReduceAlgorithm algorithm,
    int worldSize,
    long bytes,
    double timeMicros,
    double algBandwidthGBps,
    double busBandwidthGBps,
    boolean correct,
    String statistic,
    List<Double> trialMicros) {

  /** Copies the trial list; a missing statistic reads as the plain median. */
  public BenchmarkResult {
    statistic = statistic == null ? "median" : statistic;
    trialMicros = trialMicros == null ? List.of() : List.copyOf(trialMicros);
  }

  /** A point timed as the median over iterations (no trials). */
  public BenchmarkResult(
      CollectiveOp op,
      AllReduceAlgorithm algorithm,
      int worldSize,
      long bytes,
      double timeMicros,
      double algBandwidthGBps,
      double busBandwidthGBps,
      boolean correct) {
    this(
        op,
        algorithm,
        worldSize,
        bytes,
        timeMicros,
        algBandwidthGBps,
        busBandwidthGBps,
        correct,
        "median",
        List.of());
  }

  /** The algorithm's name, or "DIRECT" for operations with a single algorithm. */
  public String label() {
    return algorithm == null ? "DIRECT" : algorithm.name();
  }
}
