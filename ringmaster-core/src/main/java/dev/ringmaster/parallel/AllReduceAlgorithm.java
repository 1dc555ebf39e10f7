package dev.ringmaster.parallel;

/**
 * How an allreduce moves data between ranks. The same enum names the algorithms of the CPU
 * implementation and of device implementations, so a measured selection table applies to both.
 */
public enum AllReduceAlgorithm {
  /** Pick by message size from an {@link AllReduceTable}. */
  AUTO,
  /**
   * Ring: reduce-scatter then all-gather around the ring, each rank reading only its left
   * neighbour, in pipelined chunks. Bandwidth-optimal (2(n-1)/n of the data per link), n-1 hops of
   * latency per phase; the one that held up on PCIe.
   */
  RING,
  /** One-shot: every rank reads every peer's whole buffer and reduces it. Lowest latency. */
  ONESHOT,
  /**
   * Two-shot: rank r reduces slice r from all peers, then every rank reads the reduced slices.
   * Moves half the data of one-shot, at the cost of a second synchronisation.
   */
  TWOSHOT,
  /**
   * Recursive doubling: log2(n) pairwise exchanges of the whole buffer (non-powers of two fold the
   * extra ranks in first). For small messages.
   */
  RECURSIVE_DOUBLING
}
