package dev.ringmaster.engine.batch;

/**
 * Accounts KV cache memory in fixed-size blocks of {@code pageSize} token positions. A sequence
 * holds {@code ceil(tokens / pageSize)} blocks; it reserves more as it grows and returns them all
 * when it finishes, is cancelled, fails or is preempted.
 *
 * <p>Only the engine thread reserves and releases; other threads may read the counts (for metrics),
 * hence the synchronization.
 */
public final class KvBlockPool {
  private final int pageSize;
  private final int capacity;
  private int used;

  /**
   * A pool.
   *
   * @param pageSize token positions per block (at least 1)
   * @param capacity number of blocks (at least 1)
   */
  public KvBlockPool(int pageSize, int capacity) {
    if (pageSize < 1) {
      throw new IllegalArgumentException("page size must be >= 1, got " + pageSize);
    }
    if (capacity < 1) {
      throw new IllegalArgumentException("KV block capacity must be >= 1, got " + capacity);
    }
    this.pageSize = pageSize;
    this.capacity = capacity;
  }

  /** Token positions per block. */
  public int pageSize() {
    return pageSize;
  }

  /** Total blocks. */
  public int capacity() {
    return capacity;
  }

  /** Token positions the whole pool can hold. */
  public long capacityTokens() {
    return (long) capacity * pageSize;
  }

  /** Blocks currently reserved. */
  public synchronized int used() {
    return used;
  }

  /** Blocks currently free. */
  public synchronized int free() {
    return capacity - used;
  }

  /** Blocks needed to hold {@code tokens} positions. */
  public int blocksFor(long tokens) {
    return (int) ((tokens + pageSize - 1) / pageSize);
  }

  /** Reserves {@code n} blocks if that many are free; returns whether it did. */
  public synchronized boolean tryReserve(int n) {
    if (n < 0) {
      throw new IllegalArgumentException("cannot reserve " + n + " blocks");
    }
    if (used + n > capacity) {
      return false;
    }
    used += n;
    return true;
  }

  /** Returns {@code n} blocks to the pool. */
  public synchronized void release(int n) {
    if (n < 0 || n > used) {
      throw new IllegalStateException("releasing " + n + " blocks but only " + used + " are used");
    }
    used -= n;
  }
}
