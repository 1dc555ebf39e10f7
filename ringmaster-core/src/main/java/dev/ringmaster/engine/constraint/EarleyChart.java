package dev.ringmaster.engine.constraint;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * An Earley recogniser over bytes (with Aycock and Horspool's handling of nullable nonterminals):
 * one item set per byte read, each item a dotted production and the set it started in. Stepped
 * forward by {@link #push} and back by {@link #pop}, so a vocabulary trie walk computes a token
 * mask from the chart in place. Owned by one thread.
 */
final class EarleyChart implements TokenVocabulary.ByteWalker {
  private final Grammar grammar;
  private final List<ItemSet> sets = new ArrayList<>();

  /** The items of one position, deduplicated, with the bytes its scanning items can read. */
  private static final class ItemSet {
    private static final int LINEAR = 16;
    int[] items = new int[8];
    int[] origins = new int[8];
    int size;
    final long[] bytes = new long[4];
    private Set<Long> index;

    void add(int item, int origin) {
      if (size < LINEAR) {
        for (int k = 0; k < size; k++) {
          if (items[k] == item && origins[k] == origin) {
            return;
          }
        }
      } else {
        if (index == null) {
          index = new HashSet<>();
          for (int k = 0; k < size; k++) {
            index.add(key(items[k], origins[k]));
          }
        }
        if (!index.add(key(item, origin))) {
          return;
        }
      }
      if (size == items.length) {
        items = Arrays.copyOf(items, size * 2);
        origins = Arrays.copyOf(origins, size * 2);
      }
      items[size] = item;
      origins[size] = origin;
      size++;
    }

    private static long key(int item, int origin) {
      return ((long) item << 32) | (origin & 0xffffffffL);
    }
  }

  /** A chart at the start of the grammar, before any byte. */
  EarleyChart(Grammar grammar) {
    this.grammar = grammar;
    ItemSet start = new ItemSet();
    start.add(grammar.startItem(), 0);
    sets.add(start);
    close(start, 0);
  }

  @Override
  public boolean push(int b) {
    ItemSet current = sets.getLast();
    if ((current.bytes[b >>> 6] & (1L << b)) == 0) {
      return false;
    }
    ItemSet next = new ItemSet();
    for (int k = 0; k < current.size; k++) {
      int sym = grammar.next(current.items[k]);
      if (sym != Grammar.COMPLETE && sym < 0 && grammar.matches(~sym, b)) {
        next.add(current.items[k] + 1, current.origins[k]);
      }
    }
    int position = sets.size();
    sets.add(next);
    close(next, position);
    return true;
  }

  @Override
  public void pop() {
    if (sets.size() == 1) {
      throw new IllegalStateException("pop past the start of the chart");
    }
    sets.removeLast();
  }

  /** Predicts and completes until the set at {@code position} is closed. */
  private void close(ItemSet s, int position) {
    for (int k = 0; k < s.size; k++) {
      int item = s.items[k];
      int origin = s.origins[k];
      int sym = grammar.next(item);
      if (sym == Grammar.COMPLETE) {
        int head = grammar.head(item);
        ItemSet from = sets.get(origin);
        for (int j = 0; j < from.size; j++) {
          if (grammar.next(from.items[j]) == head) {
            s.add(from.items[j] + 1, from.origins[j]);
          }
        }
      } else if (sym >= 0) {
        for (int p : grammar.predictions(sym)) {
          s.add(p, position);
        }
        if (grammar.nullable(sym)) {
          s.add(item + 1, origin);
        }
      } else {
        grammar.addBytes(~sym, s.bytes);
      }
    }
  }

  /** Whether the bytes read so far are a whole sentence of the grammar. */
  boolean accepting() {
    ItemSet last = sets.getLast();
    int accept = grammar.acceptItem();
    for (int k = 0; k < last.size; k++) {
      if (last.items[k] == accept) {
        return true;
      }
    }
    return false;
  }

  /** Whether some byte can follow. */
  boolean continues() {
    long[] b = sets.getLast().bytes;
    return (b[0] | b[1] | b[2] | b[3]) != 0;
  }

  /** The one byte that can follow, or -1 when none or several can. */
  int onlyNextByte() {
    long[] b = sets.getLast().bytes;
    if (Long.bitCount(b[0]) + Long.bitCount(b[1]) + Long.bitCount(b[2]) + Long.bitCount(b[3])
        != 1) {
      return -1;
    }
    int w = b[0] != 0 ? 0 : b[1] != 0 ? 1 : b[2] != 0 ? 2 : 3;
    return w * 64 + Long.numberOfTrailingZeros(b[w]);
  }

  /**
   * A key equal for two charts exactly when they accept the same continuations: the last set's
   * items that can still move (scanning or waiting on a nonterminal), and, through their origins,
   * the waiting items of every earlier set a completion can reach, with positions renumbered in
   * order. Complete items and finished scans never act again, so they are left out.
   */
  long[] signature() {
    int last = sets.size() - 1;
    TreeSet<Integer> todo = new TreeSet<>();
    List<Integer> order = new ArrayList<>();
    Map<Integer, Integer> canonical = new HashMap<>();
    todo.add(last);
    while (!todo.isEmpty()) {
      int p = todo.pollLast();
      canonical.put(p, order.size());
      order.add(p);
      ItemSet s = sets.get(p);
      for (int k = 0; k < s.size; k++) {
        if (relevant(s.items[k], p == last) && !canonical.containsKey(s.origins[k])) {
          todo.add(s.origins[k]);
        }
      }
    }
    long[] out = new long[16];
    int n = 0;
    out[n++] = accepting() ? 1 : 0;
    for (int p : order) {
      ItemSet s = sets.get(p);
      long[] keys = new long[s.size];
      int m = 0;
      for (int k = 0; k < s.size; k++) {
        if (relevant(s.items[k], p == last)) {
          keys[m++] = ((long) s.items[k] << 32) | canonical.get(s.origins[k]);
        }
      }
      Arrays.sort(keys, 0, m);
      if (n + m + 1 > out.length) {
        out = Arrays.copyOf(out, Math.max(out.length * 2, n + m + 1));
      }
      out[n++] = -1 - m;
      System.arraycopy(keys, 0, out, n, m);
      n += m;
    }
    return Arrays.copyOf(out, n);
  }

  private boolean relevant(int item, boolean lastSet) {
    int sym = grammar.next(item);
    return lastSet ? sym != Grammar.COMPLETE : sym >= 0;
  }
}
