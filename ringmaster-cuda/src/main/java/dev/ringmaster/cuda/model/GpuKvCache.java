package dev.ringmaster.cuda.model;

import dev.ringmaster.runtime.KvCache;
import java.util.Arrays;

/**
 * One sequence's share of a {@link BlockPool}: its block table (block ids in position order). The
 * model wraps it with {@link KvCache#ofExternal}; closing the cache gives the blocks back. A page
 * of the prefix cache is one block: retaining it adds a reference to the block, attaching appends
 * the block to an empty table with a reference of its own, so a shared block is freed only when its
 * last holder lets go.
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

  /** A reference on one block, dropped once by {@link #close}. */
  private static final class BlockPage implements KvCache.Page {
    private final BlockPool pool;
    private final int block;
    private boolean closed;

    BlockPage(BlockPool pool, int block) {
      this.pool = pool;
      this.block = block;
    }

    @Override
    public synchronized void close() {
      if (!closed) {
        closed = true;
        pool.give(block);
      }
    }
  }

  @Override
  public synchronized KvCache.Page retainPage(int pageIndex, int pageSize) {
    checkPageSize(pageSize);
    if (pageIndex < 0 || pageIndex >= count) {
      throw new IllegalArgumentException(
          "page " + pageIndex + " is outside this cache's " + count + " blocks");
    }
    pool.retain(blocks[pageIndex]);
    return new BlockPage(pool, blocks[pageIndex]);
  }

  @Override
  public synchronized void attachPages(java.util.List<KvCache.Page> pages, int pageSize) {
    checkPageSize(pageSize);
    if (closed || count != 0) {
      throw new IllegalStateException("pages attach only to an open, empty GPU cache");
    }
    int[] ids = new int[pages.size()];
    for (int i = 0; i < ids.length; i++) {
      if (!(pages.get(i) instanceof BlockPage bp) || bp.pool != pool) {
        throw new IllegalArgumentException("page " + i + " is not a block of this GPU's KV pool");
      }
      ids[i] = bp.block;
    }
    for (int id : ids) {
      pool.retain(id);
    }
    if (blocks.length < ids.length) {
      blocks = Arrays.copyOf(blocks, ids.length);
    }
    System.arraycopy(ids, 0, blocks, 0, ids.length);
    count = ids.length;
  }

  private void checkPageSize(int pageSize) {
    if (pageSize != pool.blockSize()) {
      throw new IllegalArgumentException(
          "a shared page must be one GPU block: page size "
              + pageSize
              + " but blocks of "
              + pool.blockSize()
              + " tokens; pass the same --page-size to both");
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
