package dev.ringmaster.engine.constraint;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A deterministic automaton over bytes, trimmed so every state it can be in still reaches an
 * accepting one: a transition is either to a live state or -1. Built from a {@link RegexNode} by
 * Thompson's construction and the subset construction over byte classes (a {@link
 * RegexNode.Automaton} inside the tree enters the NFA as its own states), or from a transition
 * table ({@link DfaIntersection}). Immutable.
 */
public final class ByteDfa {
  /** Refuse automata larger than this: a schema or regex too big to compile in request time. */
  static final int MAX_STATES = 100_000;

  private final int[] next; // [state * 256 + byte], -1 dead
  private final boolean[] accepting;
  private final boolean[] exits;

  private ByteDfa(int[] next, boolean[] accepting) {
    this.next = next;
    this.accepting = accepting;
    this.exits = new boolean[accepting.length];
    for (int s = 0; s < accepting.length; s++) {
      for (int b = 0; b < 256 && !exits[s]; b++) {
        exits[s] = next[s * 256 + b] >= 0;
      }
    }
  }

  /** The automaton of a regular expression (whole-string match). */
  public static ByteDfa ofRegex(String pattern) {
    return of(RegexParser.parse(pattern));
  }

  /** The automaton of exactly the given strings (their UTF-8 bytes). */
  public static ByteDfa ofChoices(List<String> choices) {
    if (choices.isEmpty()) {
      throw new UnsupportedConstraintException("choice needs at least one string");
    }
    List<RegexNode> options = new ArrayList<>();
    for (String c : choices) {
      options.add(RegexNode.literal(c.getBytes(java.nio.charset.StandardCharsets.UTF_8)));
    }
    return of(new RegexNode.Alt(options));
  }

  static ByteDfa of(RegexNode root) {
    Nfa nfa = new Nfa();
    int[] f = nfa.compile(root);
    return determinize(nfa, f[0], f[1]);
  }

  /** The start state (0). */
  public int start() {
    return 0;
  }

  /** The state after byte {@code b} from {@code state}, or -1 when no match continues so. */
  public int next(int state, int b) {
    return next[state * 256 + (b & 0xff)];
  }

  /** Whether the bytes read so far are a match. */
  public boolean accepting(int state) {
    return accepting[state];
  }

  /** Whether some byte continues from {@code state}. */
  public boolean hasExit(int state) {
    return exits[state];
  }

  /** Number of states. */
  public int states() {
    return accepting.length;
  }

  /** Whether the whole of {@code bytes} is a match. */
  public boolean matches(byte[] bytes) {
    int s = start();
    for (byte b : bytes) {
      s = next(s, b);
      if (s < 0) {
        return false;
      }
    }
    return accepting(s);
  }

  /**
   * Thompson NFA: per state, epsilon targets and at most one byte-set edge, or (for the states of
   * an embedded automaton) that automaton's transitions.
   */
  private static final class Nfa {
    final List<int[]> eps = new ArrayList<>();
    final List<BitSet> label = new ArrayList<>();
    final List<Integer> target = new ArrayList<>();

    /** An automaton whose state {@code s} is NFA state {@code base + s}. */
    record Embedded(ByteDfa dfa, int base) {}

    final List<Embedded> embedded = new ArrayList<>();
    final List<Integer> embeddedIn = new ArrayList<>(); // per NFA state: index into embedded, or -1

    int add() {
      eps.add(new int[0]);
      label.add(null);
      target.add(-1);
      embeddedIn.add(-1);
      if (eps.size() > MAX_STATES * 4) {
        throw new UnsupportedConstraintException(
            "the constraint is too large to compile (over " + MAX_STATES * 4 + " NFA states)");
      }
      return eps.size() - 1;
    }

    void epsilon(int from, int to) {
      int[] e = eps.get(from);
      int[] n = Arrays.copyOf(e, e.length + 1);
      n[e.length] = to;
      eps.set(from, n);
    }

    /** Returns {start, end}. */
    int[] compile(RegexNode node) {
      switch (node) {
        case RegexNode.ByteSet(BitSet bytes) -> {
          int s = add();
          int e = add();
          label.set(s, bytes);
          target.set(s, e);
          return new int[] {s, e};
        }
        case RegexNode.Seq(List<RegexNode> parts) -> {
          int s = add();
          int cur = s;
          for (RegexNode p : parts) {
            int[] f = compile(p);
            epsilon(cur, f[0]);
            cur = f[1];
          }
          return new int[] {s, cur};
        }
        case RegexNode.Alt(List<RegexNode> options) -> {
          int s = add();
          int e = add();
          for (RegexNode o : options) {
            int[] f = compile(o);
            epsilon(s, f[0]);
            epsilon(f[1], e);
          }
          return new int[] {s, e};
        }
        case RegexNode.Repeat(RegexNode inner, int min, int max) -> {
          int s = add();
          int cur = s;
          for (int i = 0; i < min; i++) {
            int[] f = compile(inner);
            epsilon(cur, f[0]);
            cur = f[1];
          }
          int e = add();
          if (max < 0) {
            int[] f = compile(inner);
            epsilon(cur, f[0]);
            epsilon(f[1], f[0]);
            epsilon(f[1], e);
            epsilon(cur, e);
          } else {
            for (int i = min; i < max; i++) {
              int[] f = compile(inner);
              epsilon(cur, e);
              epsilon(cur, f[0]);
              cur = f[1];
            }
            epsilon(cur, e);
          }
          return new int[] {s, e};
        }
        case RegexNode.Automaton(ByteDfa dfa) -> {
          int base = eps.size();
          int which = embedded.size();
          embedded.add(new Embedded(dfa, base));
          for (int i = 0; i < dfa.states(); i++) {
            embeddedIn.set(add(), which);
          }
          int e = add();
          for (int i = 0; i < dfa.states(); i++) {
            if (dfa.accepting(i)) {
              epsilon(base + i, e);
            }
          }
          return new int[] {base + dfa.start(), e};
        }
      }
    }

    /** The state byte {@code b} leads to from NFA state {@code s}, or -1. */
    int move(int s, int b) {
      BitSet l = label.get(s);
      if (l != null) {
        return l.get(b) ? target.get(s) : -1;
      }
      int which = embeddedIn.get(s);
      if (which < 0) {
        return -1;
      }
      Embedded em = embedded.get(which);
      int t = em.dfa().next(s - em.base(), b);
      return t < 0 ? -1 : em.base() + t;
    }
  }

  /** Bytes no state of this automaton tells apart, as one set per class. */
  private List<BitSet> byteClasses() {
    Map<List<Integer>, BitSet> columns = new HashMap<>();
    for (int b = 0; b < 256; b++) {
      List<Integer> column = new ArrayList<>(accepting.length);
      for (int s = 0; s < accepting.length; s++) {
        column.add(next[s * 256 + b]);
      }
      columns.computeIfAbsent(column, c -> new BitSet(256)).set(b);
    }
    return new ArrayList<>(columns.values());
  }

  private static ByteDfa determinize(Nfa nfa, int start, int end) {
    // Byte classes: bytes that no edge label tells apart behave the same.
    int[] classOf = new int[256];
    List<Integer> representatives = new ArrayList<>();
    Map<BitSet, Integer> signatures = new HashMap<>();
    List<BitSet> labels = new ArrayList<>();
    for (BitSet l : nfa.label) {
      if (l != null) {
        labels.add(l);
      }
    }
    for (Nfa.Embedded em : nfa.embedded) {
      labels.addAll(em.dfa().byteClasses());
    }
    List<BitSet> distinct = new ArrayList<>(new java.util.LinkedHashSet<>(labels));
    for (int b = 0; b < 256; b++) {
      BitSet sig = new BitSet(distinct.size());
      for (int i = 0; i < distinct.size(); i++) {
        if (distinct.get(i).get(b)) {
          sig.set(i);
        }
      }
      Integer c = signatures.get(sig);
      if (c == null) {
        c = representatives.size();
        signatures.put(sig, c);
        representatives.add(b);
      }
      classOf[b] = c;
    }
    // Subsets are kept as their sorted members: a BitSet is as long as its highest member, which
    // inside a large embedded automaton would make every subset that long.
    Map<Subset, Integer> ids = new HashMap<>();
    List<Subset> sets = new ArrayList<>();
    List<int[]> rows = new ArrayList<>();
    ArrayDeque<Integer> work = new ArrayDeque<>();
    Subset first = Subset.of(closure(nfa, single(start)));
    ids.put(first, 0);
    sets.add(first);
    work.add(0);
    while (!work.isEmpty()) {
      int d = work.poll();
      int[] set = sets.get(d).members();
      int[] row = new int[representatives.size()];
      for (int c = 0; c < representatives.size(); c++) {
        int b = representatives.get(c);
        BitSet moved = new BitSet();
        for (int s : set) {
          int t = nfa.move(s, b);
          if (t >= 0) {
            moved.set(t);
          }
        }
        if (moved.isEmpty()) {
          row[c] = -1;
          continue;
        }
        Subset to = Subset.of(closure(nfa, moved));
        Integer id = ids.get(to);
        if (id == null) {
          id = sets.size();
          if (id >= MAX_STATES) {
            throw new UnsupportedConstraintException(
                "the constraint is too large to compile (over " + MAX_STATES + " DFA states)");
          }
          ids.put(to, id);
          sets.add(to);
          work.add(id);
        }
        row[c] = id;
      }
      rows.add(row);
    }
    int n = sets.size();
    boolean[] accepting = new boolean[n];
    for (int d = 0; d < n; d++) {
      accepting[d] = Arrays.binarySearch(sets.get(d).members(), end) >= 0;
    }
    ByteDfa dfa = trim(rows, classOf, accepting);
    if (dfa == null) {
      throw new UnsupportedConstraintException("the constraint matches no string at all");
    }
    return dfa;
  }

  /**
   * The automaton of a full transition table ({@code rows.get(s)[b]}: the state after byte b, or
   * -1), start state 0, trimmed of the states that reach no accepting one; null when state 0 is one
   * of those (the language is empty).
   */
  static ByteDfa ofTable(List<int[]> rows, boolean[] accepting) {
    int[] identity = new int[256];
    for (int b = 0; b < 256; b++) {
      identity[b] = b;
    }
    return trim(rows, identity, accepting);
  }

  /** This automaton with every transition on a byte outside {@code allowed} removed. */
  ByteDfa restrictedTo(BitSet allowed) {
    List<int[]> rows = new ArrayList<>(accepting.length);
    for (int s = 0; s < accepting.length; s++) {
      int[] row = Arrays.copyOfRange(next, s * 256, s * 256 + 256);
      for (int b = 0; b < 256; b++) {
        if (!allowed.get(b)) {
          row[b] = -1;
        }
      }
      rows.add(row);
    }
    ByteDfa dfa = ofTable(rows, accepting);
    if (dfa == null) {
      throw new UnsupportedConstraintException("the constraint matches no string at all");
    }
    return dfa;
  }

  /** A set of NFA states, by its members in increasing order. */
  private record Subset(int[] members) {
    static Subset of(BitSet set) {
      return new Subset(set.stream().toArray());
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Subset other && Arrays.equals(members, other.members);
    }

    @Override
    public int hashCode() {
      return Arrays.hashCode(members);
    }

    @Override
    public String toString() {
      return Arrays.toString(members);
    }
  }

  private static BitSet single(int s) {
    BitSet b = new BitSet();
    b.set(s);
    return b;
  }

  private static BitSet closure(Nfa nfa, BitSet from) {
    BitSet out = (BitSet) from.clone();
    ArrayDeque<Integer> stack = new ArrayDeque<>();
    for (int s = from.nextSetBit(0); s >= 0; s = from.nextSetBit(s + 1)) {
      stack.push(s);
    }
    while (!stack.isEmpty()) {
      for (int t : nfa.eps.get(stack.pop())) {
        if (!out.get(t)) {
          out.set(t);
          stack.push(t);
        }
      }
    }
    return out;
  }

  /**
   * Drops the states that cannot reach an accepting one and renumbers the rest; null when the start
   * state is dropped.
   */
  private static ByteDfa trim(List<int[]> rows, int[] classOf, boolean[] accepting) {
    int n = rows.size();
    List<List<Integer>> reverse = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      reverse.add(new ArrayList<>());
    }
    for (int d = 0; d < n; d++) {
      for (int t : rows.get(d)) {
        if (t >= 0) {
          reverse.get(t).add(d);
        }
      }
    }
    boolean[] live = new boolean[n];
    ArrayDeque<Integer> work = new ArrayDeque<>();
    for (int d = 0; d < n; d++) {
      if (accepting[d]) {
        live[d] = true;
        work.add(d);
      }
    }
    while (!work.isEmpty()) {
      for (int p : reverse.get(work.poll())) {
        if (!live[p]) {
          live[p] = true;
          work.add(p);
        }
      }
    }
    if (!live[0]) {
      return null;
    }
    int[] renumber = new int[n];
    int m = 0;
    for (int d = 0; d < n; d++) {
      renumber[d] = live[d] ? m++ : -1;
    }
    int[] next = new int[m * 256];
    boolean[] acc = new boolean[m];
    for (int d = 0; d < n; d++) {
      if (!live[d]) {
        continue;
      }
      int r = renumber[d];
      acc[r] = accepting[d];
      int[] row = rows.get(d);
      for (int b = 0; b < 256; b++) {
        int t = row[classOf[b]];
        next[r * 256 + b] = t < 0 ? -1 : renumber[t];
      }
    }
    return new ByteDfa(next, acc);
  }
}
