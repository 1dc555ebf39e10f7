package dev.ringmaster.parallel;

/**
 * What every group of ranks offers whatever memory it works on: identity, a barrier, the allreduce
 * algorithm in force and statistics. {@link ProcessGroup} adds collectives over Java float arrays;
 * a device implementation (for example NCCL over device pointers) is a sibling interface that
 * extends this one with the same operations over device memory and honours the same {@link
 * AllReduceAlgorithm}.
 *
 * <p>Collectives are called by every rank of the group, in the same order, with matching arguments;
 * each rank calls from its own thread. A rank's object is not for concurrent use.
 */
public interface Communicator {
  /** This rank, 0 to worldSize-1. */
  int rank();

  /** Number of ranks in the group. */
  int worldSize();

  /** The algorithm allreduces use; {@code AUTO} means chosen per call by message size. */
  AllReduceAlgorithm allReduceAlgorithm();

  /** Returns when every rank has entered the barrier. */
  void barrier();

  /** The collectives this rank has issued. */
  CollectiveStats stats();
}
