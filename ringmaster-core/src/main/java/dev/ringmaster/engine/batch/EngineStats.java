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
 * @param radixCache whether the prefix cache is on
 * @param cachedPages KV pages (blocks, counted in {@code usedBlocks}) the prefix cache holds
 * @param admittedTokens tokens of all admissions so far (prompts, and recomputed tokens after a
 *     preemption)
 * @param cachedTokens of {@code admittedTokens}, those taken from the prefix cache
 */
public record EngineStats(
    int running,
    int queued,
    int usedBlocks,
    int totalBlocks,
    int pageSize,
    long steps,
    long preemptions,
    boolean radixCache,
    int cachedPages,
    long admittedTokens,
    long cachedTokens) {

  /** Fraction of admitted tokens taken from the prefix cache, 0..1 (0 before any admission). */
  public double cacheHitRate() {
    return admittedTokens == 0 ? 0 : (double) cachedTokens / admittedTokens;
  }

  /** Fraction of the KV pool in use, 0..1. */
  public double kvUsage() {
    return totalBlocks == 0 ? 0 : (double) usedBlocks / totalBlocks;
  }
}
