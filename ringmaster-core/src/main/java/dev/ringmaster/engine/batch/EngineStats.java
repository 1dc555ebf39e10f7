package dev.ringmaster.engine.batch;

/**
 * A snapshot of the engine's load.
 *
 * @param running requests in the running batch
 * @param queued requests waiting to be admitted (submitted but not running)
 * @param usedBlocks KV blocks reserved
 * @param totalBlocks KV blocks in the pool
 * @param pageSize token positions per block
 * @param steps forward steps run so far
 * @param preemptions requests evicted to free KV blocks so far
 */
public record EngineStats(
    int running,
    int queued,
    int usedBlocks,
    int totalBlocks,
    int pageSize,
    long steps,
    long preemptions) {

  /** Fraction of the KV pool in use, 0..1. */
  public double kvUsage() {
    return totalBlocks == 0 ? 0 : (double) usedBlocks / totalBlocks;
  }
}
