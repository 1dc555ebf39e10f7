package dev.ringmaster.parallel;

/** The collective operations, with the bus-bandwidth factors nccl-tests uses to compare them. */
public enum CollectiveOp {
  ALL_REDUCE,
  ALL_GATHER,
  REDUCE_SCATTER,
  ALL_TO_ALL,
  BROADCAST,
  BARRIER;

  /**
   * The factor that turns algorithm bandwidth (bytes / time) into bus bandwidth, the per-link rate
   * that is comparable across world sizes: 2(n-1)/n for allreduce, (n-1)/n for allgather,
   * reduce-scatter and all-to-all, 1 for broadcast, 0 for a barrier (it moves no data).
   */
  public double busBandwidthFactor(int worldSize) {
    if (worldSize < 1) {
      throw new IllegalArgumentException("world size must be positive: " + worldSize);
    }
    double n = worldSize;
    return switch (this) {
      case ALL_REDUCE -> 2 * (n - 1) / n;
      case ALL_GATHER, REDUCE_SCATTER, ALL_TO_ALL -> (n - 1) / n;
      case BROADCAST -> 1;
      case BARRIER -> 0;
    };
  }
}
