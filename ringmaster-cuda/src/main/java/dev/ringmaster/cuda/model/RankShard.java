package dev.ringmaster.cuda.model;

import dev.ringmaster.cuda.collective.DeviceCommunicator;
import dev.ringmaster.model.arch.ExpertPlacement;
import dev.ringmaster.model.arch.ParallelConfig;
import dev.ringmaster.model.arch.RankContext;
import java.util.stream.IntStream;

/**
 * One GPU rank's place in a tensor/expert-parallel model: which slice of every weight it holds and
 * the communicator it reduces over. The slicing arithmetic is the CPU's ({@link RankContext}, the
 * {@link ParallelConfig}'s expert placement), so both backends split a checkpoint the same way.
 *
 * @param context rank, layout and the share/start rules (its CPU process group is unused: null)
 * @param comm this rank's device communicator; null for the plain single-GPU model, which issues no
 *     collectives at all
 */
record RankShard(RankContext context, DeviceCommunicator comm) {

  /** The plain single-GPU model: everything whole, no communicator. */
  static RankShard single() {
    return new RankShard(RankContext.single(), null);
  }

  /** Rank {@code rank} of {@code parallel} reducing over {@code comm}. */
  static RankShard of(int rank, ParallelConfig parallel, DeviceCommunicator comm) {
    if (comm.worldSize() != parallel.tpSize() || comm.rank() != rank) {
      throw new IllegalArgumentException(
          "communicator is rank "
              + comm.rank()
              + " of "
              + comm.worldSize()
              + ", the model wants rank "
              + rank
              + " of "
              + parallel.tpSize());
    }
    return new RankShard(new RankContext(rank, parallel, null), comm);
  }

  /** This rank. */
  int rank() {
    return context.rank();
  }

  /** Ranks in the model. */
  int size() {
    return context.size();
  }

  /** Whether this model runs the parallel code path (collectives), even with one rank. */
  boolean parallel() {
    return comm != null;
  }

  /** Start of this rank's share when {@code total} is split evenly. */
  int start(int total) {
    return context.start(total);
  }

  /** This rank's share of {@code total}. */
  int share(int total) {
    return context.share(total);
  }

  /** Whether routed experts are distributed whole (expert parallelism). */
  boolean expertParallel() {
    return context.parallel().expertParallel();
  }

  /**
   * Whether MoE tokens travel to their experts' ranks by all-to-all ({@code --moe-a2a-backend
   * all-to-all} on the parallel path, one rank included); the routed experts are then whole and the
   * shared experts replicated.
   */
  boolean allToAll() {
    return comm != null && context.parallel().a2a() == ParallelConfig.MoeA2aBackend.ALL_TO_ALL;
  }

  /** Per model expert, the rank that owns it under expert parallelism (all 0 with one rank). */
  int[] expertOwners(int experts) {
    ExpertPlacement p = context.parallel().placementFor(experts);
    int[] out = new int[experts];
    for (int e = 0; e < experts; e++) {
      out[e] = p.owner(e);
    }
    return out;
  }

  /** The routed experts this rank holds, in local order. */
  int[] ownedExperts(int experts) {
    if (!expertParallel()) {
      return IntStream.range(0, experts).toArray();
    }
    return context.parallel().placementFor(experts).expertsOf(rank());
  }

  /** Per model expert, its index among this rank's experts, or -1 when another rank owns it. */
  int[] localIndexOf(int experts) {
    int[] out = new int[experts];
    if (!expertParallel()) {
      return IntStream.range(0, experts).toArray();
    }
    ExpertPlacement p = context.parallel().placementFor(experts);
    for (int e = 0; e < experts; e++) {
      out[e] = p.owner(e) == rank() ? p.localIndex(e) : -1;
    }
    return out;
  }

  /** The routed experts' intermediate size on this rank (split unless experts are whole). */
  int expertInter(int inter) {
    return expertParallel() ? inter : share(inter);
  }
}
