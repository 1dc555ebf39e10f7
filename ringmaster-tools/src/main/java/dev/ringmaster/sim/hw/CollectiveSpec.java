package dev.ringmaster.sim.hw;

import java.util.Collections;
import java.util.Map;
import java.util.TreeMap;

/**
 * Collective constants of a profile.
 *
 * @param nccl NCCL models keyed {@code algorithm/protocol} (ring/LL, ring/LL128, ring/Simple,
 *     tree/LL, tree/LL128, tree/Simple); a key absent means NCCL does not use it on this box
 * @param ncclUnavailable why the absent algorithm/protocol pairs are absent
 * @param allToAll NCCL all-to-all (bus factor {@code (n-1)/n}, {@code n-1} steps)
 * @param peerKernelLaunchUs fixed cost of a one-shot/two-shot peer-memory kernel, microseconds (the
 *     uncalibrated model, see {@code peer})
 * @param fusedAllreduce whether a fused allreduce + residual + RMSNorm kernel exists for this GPU
 * @param fusedAllreduceNote why (not) and what library
 * @param peerAllreduceNote caveats of one-shot/two-shot kernels on this box
 * @param host allreduce of in-process CPU ranks, or null for a GPU box; when present, allreduces
 *     are timed by it alone
 * @param peer calibrated peer-memory kernels keyed {@code oneshot}, {@code twoshot}, {@code fused};
 *     may be null or partial. A kernel absent here follows the uncalibrated model: {@code
 *     peerKernelLaunchUs} plus one ({@code oneshot}, {@code fused}) or two ({@code twoshot})
 *     barriers of the interconnect's {@code peerSyncUs}, data at its {@code peerReadEfficiency};
 *     {@code fused} absent runs as {@code oneshot}
 * @param peerMaxBytes largest message the peer kernels take (their staging buffer); larger ones go
 *     to NCCL, and a fused one is then NCCL plus a separate add + RMSNorm kernel. 0: no limit
 * @param eagerRankSkewUs what an eagerly launched collective waits, at two ranks, for the later
 *     rank's host to launch it (a captured graph has no such wait: its collectives were launched
 *     once); see {@link #eagerSkewUs(int)} for more ranks. 0: not known for this box
 */
public record CollectiveSpec(
    Map<String, AlphaBeta> nccl,
    String ncclUnavailable,
    AlphaBeta allToAll,
    double peerKernelLaunchUs,
    boolean fusedAllreduce,
    String fusedAllreduceNote,
    String peerAllreduceNote,
    HostCollectives host,
    Map<String, PeerKernel> peer,
    long peerMaxBytes,
    double eagerRankSkewUs) {

  /** Copies the peer map, sorted by key so that saved profiles read the same every time. */
  public CollectiveSpec {
    peer = peer == null ? null : Collections.unmodifiableMap(new TreeMap<>(peer));
  }

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
        host,
        peer,
        peerMaxBytes,
        eagerRankSkewUs);
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
        newHost,
        peer,
        peerMaxBytes,
        eagerRankSkewUs);
  }

  /** Copy with other calibrated peer-memory kernels. */
  public CollectiveSpec withPeer(Map<String, PeerKernel> newPeer) {
    return new CollectiveSpec(
        nccl,
        ncclUnavailable,
        allToAll,
        peerKernelLaunchUs,
        fusedAllreduce,
        fusedAllreduceNote,
        peerAllreduceNote,
        host,
        newPeer,
        peerMaxBytes,
        eagerRankSkewUs);
  }

  /**
   * What one eagerly launched collective of {@code ranks} ranks waits for the last rank's launch:
   * the two-rank wait scaled as the expected wait for the latest of {@code ranks} independent,
   * exponentially distributed launch delays ({@code H(n) - 1} mean delays, where {@code H} is the
   * harmonic number; {@code 1/2} at two ranks).
   */
  public double eagerSkewUs(int ranks) {
    if (ranks <= 1) {
      return 0;
    }
    double harmonic = 0;
    for (int i = 1; i <= ranks; i++) {
      harmonic += 1.0 / i;
    }
    return eagerRankSkewUs * (harmonic - 1) / 0.5;
  }

  /** Whether a message of {@code bytes} fits the peer kernels' staging buffer. */
  public boolean peerFits(double bytes) {
    return peerMaxBytes <= 0 || bytes <= peerMaxBytes;
  }
}
