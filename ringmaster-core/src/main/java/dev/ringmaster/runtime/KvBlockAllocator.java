package dev.ringmaster.runtime;

/**
 * The one allocator of KV cache blocks: block ids, their free list, their reference counts, how
 * many there are and how many token positions each holds. A block is {@code pageSize} consecutive
 * positions of one sequence; ids run from 1 to {@link #capacity}, and id 0 is never handed out (the
 * GPU's padding block, which graph batches' padding rows write and read).
 *
 * <p>The scheduler creates it from the capacity the backend reports and owns it: it takes blocks
 * for its sequences ({@link KvBlockTable#ensure}), the prefix cache holds them by reference, and
 * they go back when the last holder lets go. Backends keep only the storage, indexed by these ids.
 * A model used without a scheduler (generate, bench one-batch, tests) makes caches on a private
 * allocator of its own. Counts read by metrics come from here, so the scheduler's figures and the
 * backend's memory are the same count.
 *
 * <p>Thread rules: every method is synchronized. The engine thread takes and releases; the model
 * thread may take while it runs a step of a model used without a scheduler; any thread may read the
 * counts and close page handles. {@link KvBlockTable} locks itself before this allocator, never the
 * other way round.
 */
public final class KvBlockAllocator {
  private final int pageSize;
  private final int capacity;

  /** Released ids, the last released on top; ids above {@link #highWater} were never taken. */
  private int[] released = new int[16];

  private int releasedCount;
  private int highWater;

  /** References per id, grown with {@link #highWater}. */
  private int[] refs = new int[16];

  private int used;

  /**
   * An allocator with every block free.
   *
   * @param pageSize token positions per block (at least 1)
   * @param capacity number of blocks (at least 1)
   */
  public KvBlockAllocator(int pageSize, int capacity) {
    if (pageSize < 1) {
      throw new IllegalArgumentException("page size must be >= 1, got " + pageSize);
    }
    if (capacity < 1 || capacity == Integer.MAX_VALUE) {
      throw new IllegalArgumentException(
          "KV block capacity must be in 1.." + (Integer.MAX_VALUE - 1) + ", got " + capacity);
    }
    this.pageSize = pageSize;
    this.capacity = capacity;
  }

  /** Token positions per block. */
  public int pageSize() {
    return pageSize;
  }

  /** Total blocks (ids 1 to this). */
  public int capacity() {
    return capacity;
  }

  /** Token positions all blocks together hold. */
  public long capacityTokens() {
    return (long) capacity * pageSize;
  }

  /** Blocks with at least one holder. */
  public synchronized int used() {
    return used;
  }

  /** Blocks no one holds. */
  public synchronized int free() {
    return capacity - used;
  }

  /** Blocks needed to hold {@code tokens} positions. */
  public int blocksFor(long tokens) {
    return (int) ((tokens + pageSize - 1) / pageSize);
  }

  /** A new, empty block table of one sequence over this allocator. */
  public KvBlockTable newTable() {
    return new KvBlockTable(this);
  }

  /**
   * Takes {@code n} free blocks, each with one reference, into {@code out[from, from + n)}; all or
   * nothing.
   *
   * @throws IllegalStateException when fewer than {@code n} blocks are free
   */
  synchronized void take(int n, int[] out, int from) {
    if (n < 0) {
      throw new IllegalArgumentException("cannot take " + n + " blocks");
    }
    if (n > capacity - used) {
      throw new IllegalStateException(
          "the KV cache is full: "
              + n
              + " more blocks of "
              + pageSize
              + " tokens needed, "
              + (capacity - used)
              + " of "
              + capacity
              + " free; release finished sequences' caches, or give the cache more memory"
              + " (--mem-fraction-static, --max-total-tokens)");
    }
    for (int i = 0; i < n; i++) {
      // The last released block first, else the lowest never taken (as a full free stack would).
      int id = releasedCount > 0 ? released[--releasedCount] : ++highWater;
      if (id >= refs.length) {
        refs = java.util.Arrays.copyOf(refs, (int) Math.min(2L * refs.length, capacity + 1L));
      }
      refs[id] = 1;
      out[from + i] = id;
    }
    used += n;
  }

  /** Adds a reference to a block in use (another cache, or the prefix cache, shares it). */
  public synchronized void retain(int id) {
    check(id, "shared");
    refs[id]++;
  }

  /**
   * Drops a reference to a block; the last one returns it to the free list.
   *
   * @throws IllegalStateException when the block has no reference left (a double release)
   */
  public synchronized void release(int id) {
    check(id, "released");
    if (--refs[id] == 0) {
      if (releasedCount == released.length) {
        released = java.util.Arrays.copyOf(released, 2 * releasedCount);
      }
      released[releasedCount++] = id;
      used--;
    }
  }

  /** References held on a block (0: free). */
  public synchronized int references(int id) {
    if (id < 1 || id > capacity) {
      throw new IllegalArgumentException("block id " + id + " is outside 1.." + capacity);
    }
    return id > highWater ? 0 : refs[id];
  }

  private void check(int id, String what) {
    if (id < 1 || id > highWater || refs[id] == 0) {
      throw new IllegalStateException(
          "KV block " + id + " is not in use and cannot be " + what + " (a double release?)");
    }
  }
}
