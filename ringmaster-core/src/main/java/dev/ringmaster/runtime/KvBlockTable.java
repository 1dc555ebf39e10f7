package dev.ringmaster.runtime;

import java.util.Arrays;

/**
 * One sequence's KV blocks, in position order: block {@code i} holds positions {@code [i *
 * pageSize, (i + 1) * pageSize)}. Each entry is one reference on a block of its {@link
 * KvBlockAllocator}; {@link #close} drops them all. A backend that pages its storage reads the ids
 * from here (the GPU writes them into its block-table rows); every tensor-parallel rank of one
 * sequence reads the same table, so all ranks use the same block ids.
 *
 * <p>Thread safe (synchronized): the engine thread grows it ahead of a step while the model thread
 * may read it for the step that is running.
 */
public final class KvBlockTable implements AutoCloseable {
  private final KvBlockAllocator allocator;
  private int[] ids = new int[4];
  private int count;
  private boolean closed;

  KvBlockTable(KvBlockAllocator allocator) {
    this.allocator = allocator;
  }

  /** The allocator its blocks come from. */
  public KvBlockAllocator allocator() {
    return allocator;
  }

  /** Token positions per block. */
  public int pageSize() {
    return allocator.pageSize();
  }

  /**
   * Takes blocks until the table covers {@code tokens} positions; all or nothing.
   *
   * @throws IllegalStateException when the allocator has too few free blocks (the table is left as
   *     it was), or the table is closed
   */
  public synchronized void ensure(int tokens) {
    int need = allocator.blocksFor(tokens) - count;
    if (need <= 0) {
      return;
    }
    checkOpen();
    if (count + need > ids.length) {
      ids = Arrays.copyOf(ids, Math.max(count + need, 2 * ids.length));
    }
    allocator.take(need, ids, count);
    count += need;
  }

  /** Blocks held. */
  public synchronized int count() {
    return count;
  }

  /** Positions the blocks held cover. */
  public synchronized long tokens() {
    return (long) count * allocator.pageSize();
  }

  /** The id of block {@code index}. */
  public synchronized int id(int index) {
    if (index < 0 || index >= count) {
      throw new IndexOutOfBoundsException(
          "block " + index + " is outside this table's " + count + " blocks");
    }
    return ids[index];
  }

  /**
   * Copies the first ids, at most {@code max}, into {@code dst} from {@code offset} (the rest of
   * {@code dst} is untouched); returns how many it copied.
   */
  public synchronized int copyTo(int[] dst, int offset, int max) {
    int n = Math.min(count, max);
    System.arraycopy(ids, 0, dst, offset, n);
    return n;
  }

  /** Adds a reference on block {@code index} for a page handle; returns its id. */
  public synchronized int retain(int index) {
    int id = id(index);
    allocator.retain(id);
    return id;
  }

  /**
   * Makes {@code blockIds} (blocks in use, each gaining a reference of this table) the first blocks
   * of this table, which must be empty.
   */
  public synchronized void attach(int[] blockIds) {
    checkOpen();
    if (count != 0) {
      throw new IllegalStateException(
          "blocks attach only to an empty table; this one holds " + count);
    }
    int done = 0;
    try {
      for (int id : blockIds) {
        allocator.retain(id);
        done++;
      }
    } catch (RuntimeException e) {
      for (int i = 0; i < done; i++) {
        allocator.release(blockIds[i]);
      }
      throw e;
    }
    if (ids.length < blockIds.length) {
      ids = Arrays.copyOf(ids, blockIds.length);
    }
    System.arraycopy(blockIds, 0, ids, 0, blockIds.length);
    count = blockIds.length;
  }

  /** Drops the blocks past those that cover {@code tokens} positions; returns how many went. */
  public synchronized int truncate(int tokens) {
    int keep = allocator.blocksFor(Math.max(tokens, 0));
    int dropped = 0;
    while (count > keep) {
      allocator.release(ids[--count]);
      dropped++;
    }
    return dropped;
  }

  /** Whether {@link #close} ran. */
  public synchronized boolean isClosed() {
    return closed;
  }

  /** Drops every block reference; idempotent. */
  @Override
  public synchronized void close() {
    if (!closed) {
      closed = true;
      truncate(0);
    }
  }

  private void checkOpen() {
    if (closed) {
      throw new IllegalStateException("this KV cache was released");
    }
  }
}
