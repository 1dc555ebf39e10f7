package dev.ringmaster.model.multinode;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Node 0's record of what happened to its caches and shared KV pages since the last step, in the
 * order it happened: caches closed, pages retained from a cache, pages attached to a fresh cache,
 * page handles closed, blocks past a rolled-back length given back. It travels with the next step,
 * and every other node replays it on its own caches ({@link CacheMirror}) before running that step,
 * so prefix-cache decisions made on node 0 reach every node's caches in the same order as the
 * steps.
 *
 * <p>Encoded as a flat int array of operations, each an opcode followed by its arguments. Thread
 * safe: the engine thread, the model thread and the cleaner thread add to it; the step drains it.
 */
final class CacheOps {
  /** {@code FREE_CACHE cacheId}: node 0 closed that cache. */
  static final int FREE_CACHE = 1;

  /** {@code RETAIN_PAGE cacheId pageIndex pageSize pageId}: a handle on one page of a cache. */
  static final int RETAIN_PAGE = 2;

  /** {@code ATTACH_PAGES cacheId pageSize n pageId...}: an empty cache starts with those pages. */
  static final int ATTACH_PAGES = 3;

  /** {@code RELEASE_PAGE pageId}: node 0 closed that page handle. */
  static final int RELEASE_PAGE = 4;

  /** {@code TRUNCATE_BLOCKS cacheId tokens}: that cache gave back its blocks past the positions. */
  static final int TRUNCATE_BLOCKS = 5;

  private final ConcurrentLinkedQueue<int[]> queue = new ConcurrentLinkedQueue<>();
  private final AtomicInteger nextPageId = new AtomicInteger();
  private final AtomicInteger openPages = new AtomicInteger();

  void freeCache(int cacheId) {
    queue.add(new int[] {FREE_CACHE, cacheId});
  }

  /** Records a page retained from a cache; returns the id every node will know the page by. */
  int retainPage(int cacheId, int pageIndex, int pageSize) {
    int pageId = nextPageId.getAndIncrement();
    openPages.incrementAndGet();
    queue.add(new int[] {RETAIN_PAGE, cacheId, pageIndex, pageSize, pageId});
    return pageId;
  }

  void attachPages(int cacheId, int pageSize, int[] pageIds) {
    int[] op = new int[4 + pageIds.length];
    op[0] = ATTACH_PAGES;
    op[1] = cacheId;
    op[2] = pageSize;
    op[3] = pageIds.length;
    System.arraycopy(pageIds, 0, op, 4, pageIds.length);
    queue.add(op);
  }

  void truncateBlocks(int cacheId, int tokens) {
    queue.add(new int[] {TRUNCATE_BLOCKS, cacheId, tokens});
  }

  void releasePage(int pageId) {
    openPages.decrementAndGet();
    queue.add(new int[] {RELEASE_PAGE, pageId});
  }

  /** Page handles node 0 has open. */
  int openPages() {
    return openPages.get();
  }

  /** Everything recorded since the last drain, encoded, oldest first. */
  int[] drain() {
    List<int[]> ops = new ArrayList<>();
    int total = 0;
    for (int[] op; (op = queue.poll()) != null; ) {
      ops.add(op);
      total += op.length;
    }
    int[] out = new int[total];
    int at = 0;
    for (int[] op : ops) {
      System.arraycopy(op, 0, out, at, op.length);
      at += op.length;
    }
    return out;
  }
}
