package dev.ringmaster.engine.batch;

import dev.ringmaster.runtime.KvCache;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;

/**
 * The prefix cache: a radix tree whose nodes are whole KV pages, keyed by the page's token ids, so
 * a path from the root spells a cached token prefix. Each node holds a {@link KvCache.Page}, a
 * reference on one block of the scheduler's {@link dev.ringmaster.runtime.KvBlockAllocator} (the
 * block the sequence that computed it holds too, counted once), a lock count (running sequences
 * whose caches use it) and the tick of its last use. Evicting a node closes its page: an unlocked
 * node's block has no other holder, so it goes back to the allocator. Unlocked leaves are evicted
 * least recently used first; a node with children stays, since their keys and values depend on it.
 *
 * <p>Not thread-safe: only the engine thread calls it; {@link #pages} may be read by others.
 */
final class RadixCache {
  /** One cached page. */
  static final class Node {
    private final Node parent;
    private final PageKey key;
    private final Map<PageKey, Node> children = new HashMap<>();
    private final KvCache.Page page;
    private int locks;
    private long lastUse;

    private Node(Node parent, PageKey key, KvCache.Page page) {
      this.parent = parent;
      this.key = key;
      this.page = page;
    }

    KvCache.Page page() {
      return page;
    }

    int locks() {
      return locks;
    }
  }

  /** The token ids of one page, compared by value. */
  private record PageKey(int[] tokens) {
    @Override
    public boolean equals(Object o) {
      return o instanceof PageKey k && Arrays.equals(tokens, k.tokens);
    }

    @Override
    public int hashCode() {
      return Arrays.hashCode(tokens);
    }

    @Override
    public String toString() {
      return Arrays.toString(tokens);
    }
  }

  private final int pageSize;
  private final Node root = new Node(null, null, null);
  private volatile int pages;
  private long tick;

  RadixCache(int pageSize) {
    this.pageSize = pageSize;
  }

  int pageSize() {
    return pageSize;
  }

  /** Pages (and block references) the tree holds. */
  int pages() {
    return pages;
  }

  /**
   * The longest chain of cached pages that spells a prefix of {@code tokens[0, length)}, at most
   * {@code maxPages} pages, root first; marks them used.
   */
  List<Node> match(IntAt tokens, int length, int maxPages) {
    List<Node> out = new ArrayList<>();
    Node at = root;
    long now = ++tick;
    for (int p = 0; p < maxPages && (p + 1) * pageSize <= length; p++) {
      Node next = at.children.get(key(tokens, p));
      if (next == null) {
        break;
      }
      next.lastUse = now;
      out.add(next);
      at = next;
    }
    return out;
  }

  /** How many pages {@link #match} would return, without marking them used. */
  int peek(IntAt tokens, int length, int maxPages) {
    Node at = root;
    int p = 0;
    while (p < maxPages && (p + 1) * pageSize <= length) {
      at = at.children.get(key(tokens, p));
      if (at == null) {
        break;
      }
      p++;
    }
    return p;
  }

  /** Marks nodes as used by one more running sequence: they cannot be evicted meanwhile. */
  void lock(List<Node> nodes) {
    for (Node n : nodes) {
      n.locks++;
    }
  }

  /** Undoes one {@link #lock} of each node. */
  void unlock(List<Node> nodes) {
    long now = ++tick;
    for (Node n : nodes) {
      if (n.locks <= 0) {
        throw new IllegalStateException("unlocking a prefix-cache page that is not locked");
      }
      n.locks--;
      n.lastUse = now;
    }
  }

  /**
   * The child of {@code parent} (null: the root) for page {@code pageIndex} of {@code tokens}, if
   * the tree has it.
   */
  Node child(Node parent, IntAt tokens, int pageIndex) {
    return (parent == null ? root : parent).children.get(key(tokens, pageIndex));
  }

  /**
   * Adds page {@code pageIndex} of {@code tokens} under {@code parent} (null: the root), which must
   * not have it yet. The node takes over {@code page}, a reference on the page's block.
   */
  Node insert(Node parent, IntAt tokens, int pageIndex, KvCache.Page page) {
    Node at = parent == null ? root : parent;
    PageKey k = key(tokens, pageIndex);
    if (at.children.containsKey(k)) {
      throw new IllegalStateException("page " + pageIndex + " is already cached under its prefix");
    }
    Node n = new Node(at, k, page);
    n.lastUse = ++tick;
    at.children.put(k, n);
    pages++;
    return n;
  }

  /**
   * Evicts unlocked leaves, least recently used first, until {@code blocks} pages went (their
   * blocks back to the allocator) or nothing more can go; returns how many went.
   */
  int evict(int blocks) {
    if (blocks <= 0) {
      return 0;
    }
    PriorityQueue<Node> leaves = new PriorityQueue<>((x, y) -> Long.compare(x.lastUse, y.lastUse));
    collectEvictableLeaves(root, leaves);
    int freed = 0;
    while (freed < blocks && !leaves.isEmpty()) {
      Node n = leaves.poll();
      remove(n);
      freed++;
      Node p = n.parent;
      if (p != root && p.children.isEmpty() && p.locks == 0) {
        leaves.add(p);
      }
    }
    return freed;
  }

  /** Evicts every unlocked page; returns how many went. Locked pages and their prefixes stay. */
  int flush() {
    return evict(Integer.MAX_VALUE);
  }

  /**
   * Pages no running sequence uses: what {@link #flush} would free (a sequence locks its whole path
   * from the root, so an unlocked node has no locked descendant).
   */
  int evictablePages() {
    return countEvictable(root);
  }

  private int countEvictable(Node n) {
    int count = n != root && n.locks == 0 ? 1 : 0;
    for (Node c : n.children.values()) {
      count += countEvictable(c);
    }
    return count;
  }

  private void collectEvictableLeaves(Node n, PriorityQueue<Node> out) {
    for (Node c : n.children.values()) {
      if (c.children.isEmpty()) {
        if (c.locks == 0) {
          out.add(c);
        }
      } else {
        collectEvictableLeaves(c, out);
      }
    }
  }

  private void remove(Node n) {
    n.parent.children.remove(n.key);
    n.page.close();
    pages--;
  }

  private PageKey key(IntAt tokens, int pageIndex) {
    int[] k = new int[pageSize];
    for (int i = 0; i < pageSize; i++) {
      k[i] = tokens.at(pageIndex * pageSize + i);
    }
    return new PageKey(k);
  }

  /** Token ids by position (a sequence's tokens, or an array in tests). */
  @FunctionalInterface
  interface IntAt {
    int at(int i);
  }
}
