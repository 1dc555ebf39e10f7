package dev.ringmaster.sim.hw;

import java.util.Map;

/**
 * Collective constants of a profile.
 *
 * @param nccl NCCL models keyed {@code algorithm/protocol} (ring/LL, ring/LL128, ring/Simple,
 *     tree/LL, tree/LL128, tree/Simple); a key absent means NCCL does not use it on this box
 * @param ncclUnavailable why the absent algorithm/protocol pairs are absent
 * @param allToAll NCCL all-to-all (bus factor {@code (n-1)/n}, {@code n-1} steps)
 * @param peerKernelLaunchUs fixed cost of a one-shot/two-shot peer-memory kernel, microseconds
 * @param fusedAllreduce whether a fused allreduce + residual + RMSNorm kernel exists for this GPU
 * @param fusedAllreduceNote why (not) and what library
 * @param peerAllreduceNote caveats of one-shot/two-shot kernels on this box
 * @param host allreduce of in-process CPU ranks, or null for a GPU box; when present, allreduces
 *     are timed by it alone
 */
public record CollectiveSpec(
    Map<String, AlphaBeta> nccl,
    String ncclUnavailable,
    AlphaBeta allToAll,
    double peerKernelLaunchUs,
    boolean fusedAllreduce,
    String fusedAllreduceNote,
    String peerAllreduceNote,
    HostCollectives host) {

  /** Copy with other NCCL and all-to-all constants. */
  public CollectiveSpec withModels(Map<String, AlphaBeta> ncclModels, AlphaBeta a2a) {
    return new CollectiveSpec(
        ncclModels,
        ncclUnavailable,
        a2a,
        peerKernelLaunchUs,
        fusedAllreduce,
        fusedAllreduceNote,
        peerAllreduceNote,
        host);
  }

  /** Copy with other in-process CPU constants. */
  public CollectiveSpec withHost(HostCollectives newHost) {
    return new CollectiveSpec(
        nccl,
        ncclUnavailable,
        allToAll,
        peerKernelLaunchUs,
        fusedAllreduce,
        fusedAllreduceNote,
        peerAllreduceNote,
        newHost);
  }
}
