package dev.ringmaster.model.multinode;

import dev.ringmaster.runtime.KvCache;
import java.lang.ref.Cleaner;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A node-0 cache: this node's ranks' cache under an id the other nodes know it by. Its pages are
 * this node's pages under ids the other nodes know them by. What happens to it and its pages is
 * recorded in {@link CacheOps} for the other nodes to replay.
 */
final class NodeCache implements KvCache.External {
  private static final Cleaner CLEANER = Cleaner.create();

  final int id;
  final KvCache inner;
  private final CacheOps ops;
  private final AtomicBoolean closed = new AtomicBoolean();
  private Cleaner.Cleanable cleanable;

  private NodeCache(int id, KvCache inner, CacheOps ops) {
    this.id = id;
    this.inner = inner;
    this.ops = ops;
  }

  /**
   * Node 0's cache {@code id} over {@code inner}, counted in {@code open} until it is closed or
   * becomes unreachable (either queues the id for the other nodes to drop).
   */
  static KvCache open(int id, KvCache inner, CacheOps ops, AtomicInteger open) {
    NodeCache nc = new NodeCache(id, inner, ops);
    KvCache outer = KvCache.ofExternal(nc);
    open.incrementAndGet();
    nc.cleanable = CLEANER.register(outer, new FreeId(ops, open, id));
    return outer;
  }

  /** Whether {@link #close} ran. */
  boolean isClosed() {
    return closed.get();
  }

  /** Queues a cache id for the other nodes to drop; runs once, on close or when unreachable. */
  private record FreeId(CacheOps ops, AtomicInteger open, int id) implements Runnable {
    @Override
    public void run() {
      open.decrementAndGet();
      ops.freeCache(id);
    }
  }

  @Override
  public KvCache.Page retainPage(int pageIndex, int pageSize) {
    KvCache.Page page = inner.retainPage(pageIndex, pageSize);
    return new NodePage(ops.retainPage(id, pageIndex, pageSize), page, ops);
  }

  @Override
  public void attachPages(List<KvCache.Page> pages, int pageSize) {
    List<KvCache.Page> mine = new ArrayList<>(pages.size());
    int[] ids = new int[pages.size()];
    for (int i = 0; i < ids.length; i++) {
      if (!(pages.get(i) instanceof NodePage np) || np.closed.get()) {
        throw new IllegalArgumentException(
            "page " + i + " was not retained from a cache of this model, or is closed");
      }
      mine.add(np.inner);
      ids[i] = np.id;
    }
    inner.attachPages(mine, pageSize);
    ops.attachPages(id, pageSize, ids);
  }

  @Override
  public void ensureCapacity(int tokens) {
    inner.ensureCapacity(tokens);
  }

  @Override
  public void reserve(int tokens) {
    inner.reserve(tokens);
  }

  @Override
  public int blockCount() {
    return inner.blockCount();
  }

  @Override
  public int truncateBlocks(int tokens) {
    int dropped = inner.truncateBlocks(tokens);
    ops.truncateBlocks(id, tokens);
    return dropped;
  }

  @Override
  public void close() {
    if (closed.compareAndSet(false, true)) {
      try {
        inner.close();
      } finally {
        cleanable.clean();
      }
    }
  }

  /** A node-0 page: this node's page under an id the other nodes know it by. */
  private static final class NodePage implements KvCache.Page {
    final int id;
    final KvCache.Page inner;
    final CacheOps ops;
    final AtomicBoolean closed = new AtomicBoolean();

    NodePage(int id, KvCache.Page inner, CacheOps ops) {
      this.id = id;
      this.inner = inner;
      this.ops = ops;
    }

    @Override
    public void close() {
      if (closed.compareAndSet(false, true)) {
        inner.close();
        ops.releasePage(id);
      }
    }
  }
}
