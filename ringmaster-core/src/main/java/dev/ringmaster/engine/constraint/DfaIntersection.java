package dev.ringmaster.engine.constraint;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Intersections of byte automata by the product construction: the pairs of states reachable from
 * the two starts on the same bytes, a pair accepting when both are, trimmed of the pairs that reach
 * no accepting one. The second side may be implicit (a {@link Side}), so an automaton with many
 * states, such as the remainders modulo a large divisor, is only walked where the first side goes.
 */
final class DfaIntersection {
  private DfaIntersection() {}

  /** A deterministic automaton given by its functions; states are ints, -1 is dead. */
  interface Side {
    /** The start state. */
    int start();

    /** The state after byte {@code b} (0-255) from {@code state}, or -1. */
    int next(int state, int b);

    /** Whether {@code state} accepts. */
    boolean accepting(int state);

    /** A compiled automaton as a side. */
    static Side of(ByteDfa dfa) {
      return new Side() {
        @Override
        public int start() {
          return dfa.start();
        }

        @Override
        public int next(int state, int b) {
          return dfa.next(state, b);
        }

        @Override
        public boolean accepting(int state) {
          return dfa.accepting(state);
        }
      };
    }
  }

  /** The product would pass {@code maxStates}: the caller refuses the keyword that asked for it. */
  static final class TooLarge extends RuntimeException {
    private static final long serialVersionUID = 1L;

    TooLarge(int maxStates) {
      super("over " + maxStates + " automaton states", null, false, false);
    }
  }

  /**
   * The strings both sides accept, or null when there are none.
   *
   * @throws TooLarge when more than {@code maxStates} pairs are reachable
   */
  static ByteDfa intersect(ByteDfa a, Side b, int maxStates) {
    Map<Long, Integer> ids = new HashMap<>();
    List<Long> pairs = new ArrayList<>();
    List<int[]> rows = new ArrayList<>();
    ArrayDeque<Integer> work = new ArrayDeque<>();
    long first = pack(a.start(), b.start());
    ids.put(first, 0);
    pairs.add(first);
    work.add(0);
    while (!work.isEmpty()) {
      int id = work.poll();
      long pair = pairs.get(id);
      int sa = (int) (pair >>> 32);
      int sb = (int) pair;
      int[] row = new int[256];
      for (int c = 0; c < 256; c++) {
        int ta = a.next(sa, c);
        int tb = ta < 0 ? -1 : b.next(sb, c);
        if (tb < 0) {
          row[c] = -1;
          continue;
        }
        long to = pack(ta, tb);
        Integer t = ids.get(to);
        if (t == null) {
          t = pairs.size();
          if (t >= maxStates) {
            throw new TooLarge(maxStates);
          }
          ids.put(to, t);
          pairs.add(to);
          work.add(t);
        }
        row[c] = t;
      }
      rows.add(row); // states are polled in the order they are numbered
    }
    boolean[] accepting = new boolean[pairs.size()];
    for (int i = 0; i < accepting.length; i++) {
      long p = pairs.get(i);
      accepting[i] = a.accepting((int) (p >>> 32)) && b.accepting((int) p);
    }
    return ByteDfa.ofTable(rows, accepting);
  }

  private static long pack(int a, int b) {
    return ((long) a << 32) | (b & 0xffffffffL);
  }

  /**
   * Optionally signed decimal integers (a {@code -} and then digits, nothing else) that are
   * multiples of {@code divisor}: its states are the start, the start after the sign, and the
   * remainder modulo {@code divisor} of the digits read so far.
   */
  static Side multiplesOf(int divisor) {
    if (divisor <= 0) {
      throw new IllegalArgumentException("divisor " + divisor + " is not positive");
    }
    return new Side() {
      private static final int START = 0;
      private static final int SIGNED = 1;

      @Override
      public int start() {
        return START;
      }

      @Override
      public int next(int state, int b) {
        if (b == '-') {
          return state == START ? SIGNED : -1;
        }
        if (b < '0' || b > '9') {
          return -1;
        }
        long r = state <= SIGNED ? 0 : state - 2;
        return 2 + (int) ((r * 10 + (b - '0')) % divisor);
      }

      @Override
      public boolean accepting(int state) {
        return state == 2;
      }
    };
  }
}
