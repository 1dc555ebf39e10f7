package dev.ringmaster.model.arch;

import dev.ringmaster.parallel.ProcessGroup;

/**
 * One rank's place in a parallel model: its rank, the parallel layout, and the group it talks to
 * (null when there is a single rank).
 *
 * @param rank this rank
 * @param parallel the layout
 * @param group collectives among the tensor-parallel ranks, or null for a single rank
 */
public record RankContext(int rank, ParallelConfig parallel, ProcessGroup group) {
  /** The context of an unsharded model. */
  public static RankContext single() {
    return new RankContext(0, ParallelConfig.single(), null);
  }

  /** Number of ranks. */
  public int size() {
    return parallel.tpSize();
  }

  /** Start of this rank's share when {@code total} is split evenly. */
  public int start(int total) {
    return rank * (total / size());
  }

  /** This rank's share of {@code total}. */
  public int share(int total) {
    return total / size();
  }

  /** Sums {@code len} values across ranks in place (no-op for a single rank). */
  public void allReduce(float[] buf, int len) {
    if (group != null && size() > 1) {
      group.allReduce(buf, 0, len);
    }
  }
}
