package dev.ringmaster.engine.batch;

/**
 * Scheduling limits of the batch engine.
 *
 * @param maxRunningRequests requests in the running batch at most
 * @param maxQueuedRequests requests waiting for admission at most; more are refused
 * @param chunkedPrefillSize prompt tokens processed per step at most, over all requests; a longer
 *     prompt is split into chunks so decodes keep flowing
 * @param pageSize token positions per KV block
 * @param kvBlocks KV blocks in the pool
 * @param overlap whether the next step is planned and built while the current one runs on a model
 *     thread (SGLang's overlap schedule); off, the engine thread runs each forward itself
 * @param radixCache whether whole KV pages of finished prefixes are kept in a radix tree and reused
 *     by later requests that start with the same tokens (prefix caching)
 * @param schedulePolicy the order in which waiting requests are admitted
 * @param jumpForward whether a constrained request whose constraint allows only one continuation
 *     gets those bytes appended without sampling (jump-forward decoding): retokenised, they are the
 *     input of its next step, an extend of several tokens instead of as many decode steps
 */
public record BatchConfig(
    int maxRunningRequests,
    int maxQueuedRequests,
    int chunkedPrefillSize,
    int pageSize,
    int kvBlocks,
    boolean overlap,
    boolean radixCache,
    SchedulePolicy schedulePolicy,
    boolean jumpForward) {

  /** Validates every limit. */
  public BatchConfig {
    positive("max running requests", maxRunningRequests);
    positive("max queued requests", maxQueuedRequests);
    positive("chunked prefill size", chunkedPrefillSize);
    positive("page size", pageSize);
    positive("KV blocks", kvBlocks);
    java.util.Objects.requireNonNull(schedulePolicy, "schedulePolicy");
  }

  /** Limits with jump-forward decoding on. */
  public BatchConfig(
      int maxRunningRequests,
      int maxQueuedRequests,
      int chunkedPrefillSize,
      int pageSize,
      int kvBlocks,
      boolean overlap,
      boolean radixCache,
      SchedulePolicy schedulePolicy) {
    this(
        maxRunningRequests,
        maxQueuedRequests,
        chunkedPrefillSize,
        pageSize,
        kvBlocks,
        overlap,
        radixCache,
        schedulePolicy,
        true);
  }

  /** Limits with the radix cache on and first-come-first-served admission. */
  public BatchConfig(
      int maxRunningRequests,
      int maxQueuedRequests,
      int chunkedPrefillSize,
      int pageSize,
      int kvBlocks,
      boolean overlap) {
    this(
        maxRunningRequests,
        maxQueuedRequests,
        chunkedPrefillSize,
        pageSize,
        kvBlocks,
        overlap,
        true,
        SchedulePolicy.FCFS);
  }

  /** Limits with the overlap schedule on. */
  public BatchConfig(
      int maxRunningRequests,
      int maxQueuedRequests,
      int chunkedPrefillSize,
      int pageSize,
      int kvBlocks) {
    this(maxRunningRequests, maxQueuedRequests, chunkedPrefillSize, pageSize, kvBlocks, true);
  }

  /** A copy with the overlap schedule on or off. */
  public BatchConfig withOverlap(boolean on) {
    return new BatchConfig(
        maxRunningRequests,
        maxQueuedRequests,
        chunkedPrefillSize,
        pageSize,
        kvBlocks,
        on,
        radixCache,
        schedulePolicy,
        jumpForward);
  }

  /** A copy with the radix (prefix) cache on or off. */
  public BatchConfig withRadixCache(boolean on) {
    return new BatchConfig(
        maxRunningRequests,
        maxQueuedRequests,
        chunkedPrefillSize,
        pageSize,
        kvBlocks,
        overlap,
        on,
        schedulePolicy,
        jumpForward);
  }

  /** A copy with another admission order. */
  public BatchConfig withSchedulePolicy(SchedulePolicy policy) {
    return new BatchConfig(
        maxRunningRequests,
        maxQueuedRequests,
        chunkedPrefillSize,
        pageSize,
        kvBlocks,
        overlap,
        radixCache,
        policy,
        jumpForward);
  }

  /** A copy with jump-forward decoding on or off. */
  public BatchConfig withJumpForward(boolean on) {
    return new BatchConfig(
        maxRunningRequests,
        maxQueuedRequests,
        chunkedPrefillSize,
        pageSize,
        kvBlocks,
        overlap,
        radixCache,
        schedulePolicy,
        on);
  }

  private static void positive(String name, int v) {
    if (v < 1) {
      throw new IllegalArgumentException(name + " must be >= 1, got " + v);
    }
  }
}
