package dev.ringmaster.cuda.model;

import dev.ringmaster.runtime.KvBlockTable;
import dev.ringmaster.runtime.KvCache;
import java.util.List;

/**
 * One sequence's view of a {@link BlockPool}: the storage side of a cache whose block ids are a
 * {@link KvBlockTable} (the cache owns the table; on a tensor-parallel model every rank's view
 * reads the same one). It takes no blocks itself: the table's allocator hands them out before the
 * step that writes them, so {@link #ensureCapacity} only checks that they are there. A prefix-cache
 * page is its block: the cache's page handle holds the block's reference, and this storage adds
 * nothing to it.
 */
final class GpuKvCache implements KvCache.External {
  /** A page of this storage: the rows are the block itself, so there is nothing more to hold. */
  private record BlockRows(BlockPool pool) implements KvCache.Page {
    @Override
    public void close() {
      // the block's reference is the page handle's; the rows stay in the pool
    }
  }

  private final BlockPool pool;
  private final KvBlockTable table;

  GpuKvCache(BlockPool pool, KvBlockTable table) {
    this.pool = pool;
    this.table = table;
  }

  BlockPool pool() {
    return pool;
  }

  @Override
  public void ensureCapacity(int tokens) {
    if (table.isClosed()) {
      throw new IllegalStateException("this KV cache was released");
    }
    if (table.tokens() < tokens) {
      throw new IllegalStateException(
          "the GPU cache's block table covers "
              + table.tokens()
              + " positions but the step writes "
              + tokens
              + ": reserve the blocks on the sequence's cache first");
    }
  }

  @Override
  public KvCache.Page retainPage(int pageIndex, int pageSize) {
    checkPageSize(pageSize);
    if (pageIndex < 0 || pageIndex >= table.count()) {
      throw new IllegalArgumentException(
          "page " + pageIndex + " is outside this cache's " + table.count() + " blocks");
    }
    return new BlockRows(pool);
  }

  @Override
  public void attachPages(List<KvCache.Page> pages, int pageSize) {
    checkPageSize(pageSize);
    for (int i = 0; i < pages.size(); i++) {
      if (!(pages.get(i) instanceof BlockRows rows) || rows.pool() != pool) {
        throw new IllegalArgumentException("page " + i + " is not a block of this GPU's KV pool");
      }
    }
    if (table.count() != pages.size()) {
      throw new IllegalStateException(
          "the attached pages' blocks are not this cache's first blocks: the table holds "
              + table.count()
              + " for "
              + pages.size()
              + " pages");
    }
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
    return table.id(pos / pool.blockSize());
  }

  /**
   * Copies the block table into {@code dst} from {@code offset}, at most {@code width} ids (blocks
   * reserved past the table row's width hold no position a step can reach); the rest of the row is
   * left as it is.
   */
  void writeTable(int[] dst, int offset, int width) {
    table.copyTo(dst, offset, width);
  }

  /** Blocks of the table this storage reads. */
  @Override
  public int blockCount() {
    return table.count();
  }

  @Override
  public void close() {
    // the owning cache closes the table; the storage holds nothing of its own
  }
}
