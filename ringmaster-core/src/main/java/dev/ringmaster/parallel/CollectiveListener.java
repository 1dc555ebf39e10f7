package dev.ringmaster.parallel;

/**
 * Told about every collective a rank issues, for tracing. Called on the rank's thread before the
 * collective runs, so it must be cheap and must not allocate if the caller wants allocation-free
 * steady state.
 */
@FunctionalInterface
public interface CollectiveListener {
  /**
   * One collective issued.
   *
   * @param op the operation
   * @param algorithm the allreduce algorithm actually used (never AUTO), or null for other ops
   * @param bytes the payload in nccl-tests terms: the buffer for allreduce and broadcast, the whole
   *     gathered buffer for allgather, the whole input for reduce-scatter, this rank's send buffer
   *     for all-to-all, 0 for a barrier
   */
  void onCollective(CollectiveOp op, AllReduceAlgorithm algorithm, long bytes);
}
