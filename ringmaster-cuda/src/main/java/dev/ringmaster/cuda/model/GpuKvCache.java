package dev.ringmaster.cuda.model;

import dev.ringmaster.runtime.KvCache;
import java.util.Arrays;

/**
 * One sequence's share of a {@link BlockPool}: its block table (block ids in position order). The
 * model wraps it with {@link KvCache#ofExternal}; closing the cache gives the blocks back.
 */
final class GpuKvCache implements KvCache.External {
  private final BlockPool pool;
  private int[] blocks = new int[4];
  private int count;
  private boolean closed;

  GpuKvCache(BlockPool pool) {
    this.pool = pool;
  }

  BlockPool pool() {
    return pool;
  }

  @Override
  public synchronized void ensureCapacity(int tokens) {
    if (closed) {
      throw new IllegalStateException("this KV cache was released");
    }
    int needed = (tokens + pool.blockSize() - 1) / pool.blockSize();
    while (count < needed) {
      if (count == blocks.length) {
        blocks = Arrays.copyOf(blocks, 2 * count);
      }
      int block = pool.take(); // before count moves: a full pool leaves the table as it was
      blocks[count++] = block;
    }
  }

  /** Block holding position {@code pos}. */
  int block(int pos) {
    return blocks[pos / pool.blockSize()];
  }

  /** Copies the block table into {@code row} (the rest of the row is left as it is). */
  synchronized void writeTable(int[] dst, int offset) {
    System.arraycopy(blocks, 0, dst, offset, count);
  }

  /** Blocks held. */
  synchronized int blockCount() {
    return count;
  }

  @Override
  public synchronized void close() {
    if (!closed) {
      closed = true;
      for (int i = 0; i < count; i++) {
        pool.give(blocks[i]);
      }
      count = 0;
    }
  }
}
