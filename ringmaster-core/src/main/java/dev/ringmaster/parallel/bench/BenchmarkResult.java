package dev.ringmaster.parallel.bench;

import dev.ringmaster.parallel.AllReduceAlgorithm;
import dev.ringmaster.parallel.CollectiveOp;

/**
 * One measured point.
 *
 * @param op the operation
 * @param algorithm the allreduce algorithm, or null for operations with a single algorithm
 * @param worldSize number of ranks
 * @param bytes message size as nccl-tests counts it: the buffer for allreduce and broadcast, the
 *     whole gathered buffer for allgather, the whole input for reduce-scatter, a rank's whole send
 *     buffer for all-to-all
 * @param timeMicros median time of one operation (slowest rank per iteration), microseconds
 * @param algBandwidthGBps bytes / time, in GB/s (10^9 bytes per second)
 * @param busBandwidthGBps algorithm bandwidth times {@link CollectiveOp#busBandwidthFactor}
 * @param correct whether every rank's result matched the expected values exactly
 */
public record BenchmarkResult(
    CollectiveOp op,
    AllReduceAlgorithm algorithm,
    int worldSize,
    long bytes,
    double timeMicros,
    double algBandwidthGBps,
    double busBandwidthGBps,
    boolean correct) {

  /** The algorithm's name, or "DIRECT" for operations with a single algorithm. */
  public String label() {
    return algorithm == null ? "DIRECT" : algorithm.name();
  }
}
