package dev.ringmaster.parallel;

/** The elementwise sums collectives use; each fixes its summation order so results are exact. */
final class Reduce {
  /** Elements reduced at a time, so the accumulator stays in cache across peers. */
  private static final int BLOCK = 4096;

  private Reduce() {}

  /**
   * {@code dst[dstOff+i] = ((s0[i] + s1[i]) + s2[i]) + ...} over the ranks' staging buffers of the
   * given parity, always in rank order, starting at {@code srcOff} in each.
   */
  static void ranksInOrder(Peer[] peers, int parity, int srcOff, float[] dst, int dstOff, int len) {
    for (int b = 0; b < len; b += BLOCK) {
      int m = Math.min(BLOCK, len - b);
      System.arraycopy(peers[0].stage[parity], srcOff + b, dst, dstOff + b, m);
      for (int s = 1; s < peers.length; s++) {
        add(peers[s].stage[parity], srcOff + b, dst, dstOff + b, m);
      }
    }
  }

  /** {@code acc[a+i] = acc[a+i] + x[x0+i]}. */
  static void add(float[] x, int x0, float[] acc, int a, int len) {
    for (int i = 0; i < len; i++) {
      acc[a + i] += x[x0 + i];
    }
  }

  /** {@code acc[a+i] = x[x0+i] + acc[a+i]} (the other operand order, for a lower-ranked x). */
  static void addFirst(float[] x, int x0, float[] acc, int a, int len) {
    for (int i = 0; i < len; i++) {
      acc[a + i] = x[x0 + i] + acc[a + i];
    }
  }
}
