package dev.ringmaster.parallel;

/**
 * The allreduce algorithms of one rank over some transport (shared memory between threads, TCP
 * between nodes), in place on {@code buf[off .. off+len)}; every rank calls the same algorithm.
 */
public interface AllReduceSteps {
  /** Reduce-scatter then all-gather around the ring, chunked. */
  void ring(float[] buf, int off, int len);

  /** Every rank reads every peer's whole buffer and reduces it. */
  void oneShot(float[] buf, int off, int len);

  /** Reduce-scatter by peer reads, then all-gather of the reduced slices. */
  void twoShot(float[] buf, int off, int len);

  /** Pairwise exchanges at doubling distances. */
  void recursiveDoubling(float[] buf, int off, int len);

  /**
   * Runs {@code algorithm} (resolved: not AUTO). NCCL means the ring and FUSED the one-shot, as on
   * GPUs without NCCL or without a norm to fuse.
   */
  default void run(AllReduceAlgorithm algorithm, float[] buf, int off, int len) {
    switch (algorithm) {
      case RING, NCCL -> ring(buf, off, len);
      case ONESHOT, FUSED -> oneShot(buf, off, len);
      case TWOSHOT -> twoShot(buf, off, len);
      case RECURSIVE_DOUBLING -> recursiveDoubling(buf, off, len);
      case AUTO ->
          throw new IllegalArgumentException("AUTO must be resolved to an algorithm first");
    }
  }
}
