package dev.ringmaster.engine;

import java.util.Arrays;

/**
 * The distinct tokens one request has seen (prompt and output) with their output counts, as the
 * penalties need them: an open-addressing map over primitive arrays plus the tokens in first-seen
 * order, updated by one probe per generated token.
 */
public final class TokenCounts {
  private int[] keys;
  private int[] slotOf; // slot -> index into order/counts, -1 empty
  private int[] order = new int[16];
  private int[] counts = new int[16];
  private int size;

  /** Counts for a request with {@code prompt} (each prompt token seen, output count 0). */
  public TokenCounts(int[] prompt) {
    int cap = Integer.highestOneBit(Math.max(16, prompt.length * 2)) * 2;
    keys = new int[cap];
    slotOf = new int[cap];
    Arrays.fill(slotOf, -1);
    for (int t : prompt) {
      index(t);
    }
  }

  /** Records one generated {@code token}. */
  public void addOutput(int token) {
    int i = index(token); // may grow counts: index first
    counts[i]++;
  }

  /** Distinct tokens seen. */
  public int size() {
    return size;
  }

  /** The {@code i}-th distinct token in first-seen order. */
  public int token(int i) {
    return order[i];
  }

  /** How often the {@code i}-th distinct token occurs in the output. */
  public int outputCount(int i) {
    return counts[i];
  }

  /** How often {@code token} occurs in the output (0 when unseen or only in the prompt). */
  public int outputCountOf(int token) {
    int mask = keys.length - 1;
    for (int s = mix(token) & mask; slotOf[s] >= 0; s = (s + 1) & mask) {
      if (keys[s] == token) {
        return counts[slotOf[s]];
      }
    }
    return 0;
  }

  private int index(int token) {
    int mask = keys.length - 1;
    int s = mix(token) & mask;
    for (; slotOf[s] >= 0; s = (s + 1) & mask) {
      if (keys[s] == token) {
        return slotOf[s];
      }
    }
    if (size == order.length) {
      order = Arrays.copyOf(order, size * 2);
      counts = Arrays.copyOf(counts, size * 2);
    }
    int i = size++;
    order[i] = token;
    counts[i] = 0;
    keys[s] = token;
    slotOf[s] = i;
    if (size * 2 > keys.length) {
      rehash();
    }
    return i;
  }

  private void rehash() {
    int cap = keys.length * 2;
    keys = new int[cap];
    slotOf = new int[cap];
    Arrays.fill(slotOf, -1);
    int mask = cap - 1;
    for (int i = 0; i < size; i++) {
      int s = mix(order[i]) & mask;
      while (slotOf[s] >= 0) {
        s = (s + 1) & mask;
      }
      keys[s] = order[i];
      slotOf[s] = i;
    }
  }

  private static int mix(int x) {
    x *= 0x9E3779B9;
    return x ^ (x >>> 16);
  }
}
