package dev.ringmaster.model.multinode;

import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.runtime.LanguageModel;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A node's copies of node 0's caches and shared KV pages, by node 0's ids: it replays the
 * operations of {@link CacheOps} on this node's ranks. A cache is created the first time an id is
 * used. Only the node's control thread calls it.
 */
final class CacheMirror implements AutoCloseable {
  private final LanguageModel model;
  private final Map<Integer, KvCache> caches = new HashMap<>();
  private final Map<Integer, KvCache.Page> pages = new HashMap<>();

  CacheMirror(LanguageModel model) {
    this.model = model;
  }

  /** The cache node 0 calls {@code id}, created empty on first use. */
  KvCache cache(int id) {
    return caches.computeIfAbsent(id, i -> model.newCache());
  }

  /** Caches held. */
  int caches() {
    return caches.size();
  }

  /** Page handles held. */
  int pages() {
    return pages.size();
  }

  /**
   * Replays encoded operations in order.
   *
   * @throws IllegalStateException when they name a page this node does not hold, or are malformed
   *     (node 0 and this node disagree about the run)
   */
  void apply(int[] ops) {
    int i = 0;
    while (i < ops.length) {
      int op = ops[i];
      switch (op) {
        case CacheOps.FREE_CACHE -> {
          need(ops, i, 2);
          KvCache c = caches.remove(ops[i + 1]);
          if (c != null) {
            c.close();
          }
          i += 2;
        }
        case CacheOps.RETAIN_PAGE -> {
          need(ops, i, 5);
          int pageId = ops[i + 4];
          if (pages.containsKey(pageId)) {
            throw new IllegalStateException("node 0 retained page " + pageId + " twice");
          }
          pages.put(pageId, cache(ops[i + 1]).retainPage(ops[i + 2], ops[i + 3]));
          i += 5;
        }
        case CacheOps.ATTACH_PAGES -> {
          need(ops, i, 4);
          int n = ops[i + 3];
          need(ops, i, 4 + n);
          List<KvCache.Page> list = new ArrayList<>(n);
          for (int k = 0; k < n; k++) {
            list.add(page(ops[i + 4 + k]));
          }
          cache(ops[i + 1]).attachPages(list, ops[i + 2]);
          i += 4 + n;
        }
        case CacheOps.RELEASE_PAGE -> {
          need(ops, i, 2);
          page(ops[i + 1]).close();
          pages.remove(ops[i + 1]);
          i += 2;
        }
        case CacheOps.TRUNCATE_BLOCKS -> {
          need(ops, i, 3);
          KvCache c = cache(ops[i + 1]);
          if (c.blockTable() != null) {
            c.truncateBlocks(ops[i + 2]); // heap caches of a CPU node take no block ids
          }
          i += 3;
        }
        default -> throw new IllegalStateException("unknown cache operation " + op + " at " + i);
      }
    }
  }

  private KvCache.Page page(int id) {
    KvCache.Page p = pages.get(id);
    if (p == null) {
      throw new IllegalStateException("node 0 used page " + id + ", which this node does not hold");
    }
    return p;
  }

  private static void need(int[] ops, int at, int length) {
    if (at + length > ops.length) {
      throw new IllegalStateException("a cache operation at " + at + " is cut short");
    }
  }

  /** Closes every cache and page handle. */
  @Override
  public void close() {
    for (KvCache c : caches.values()) {
      c.close();
    }
    caches.clear();
    for (KvCache.Page p : pages.values()) {
      p.close();
    }
    pages.clear();
  }
}
