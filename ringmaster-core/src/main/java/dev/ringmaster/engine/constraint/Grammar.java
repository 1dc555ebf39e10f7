package dev.ringmaster.engine.constraint;

import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A context-free grammar over bytes in the flat form an Earley recogniser walks: productions of
 * symbols, where a symbol {@code >= 0} is a nonterminal and {@code ~t} ({@code < 0}) is terminal
 * {@code t}, a set of bytes. Production 0 is the added start {@code S' -> root}. The dotted
 * positions of all productions ("items") are numbered so an item is one int. Every nonterminal
 * reachable from the start derives some finite string (refused otherwise), so every prefix the
 * recogniser accepts extends to a whole sentence. Immutable.
 */
final class Grammar {
  /** {@link #next} of an item with the dot at its end. */
  static final int COMPLETE = Integer.MIN_VALUE;

  /** Refuse grammars that flatten to more items than this. */
  static final int MAX_ITEMS = 200_000;

  private final int[] lhs; // per production
  private final int[][] rhs; // per production
  private final int[][] productionsOf; // per nonterminal
  private final int[][] predictions; // per nonterminal, the items of its productions at dot 0
  private final boolean[] nullable; // per nonterminal
  private final long[][] terminals; // per terminal, its bytes as 4 words
  private final int[] itemBase; // per production, the item of dot 0
  private final int[] itemProduction; // per item
  private final int[] itemNext; // per item, the symbol after the dot or COMPLETE

  private Grammar(
      List<int[]> productions, List<Integer> heads, List<String> names, List<BitSet> terms) {
    int n = productions.size();
    int nonterminals = names.size();
    this.lhs = new int[n];
    this.rhs = new int[n][];
    int items = 0;
    for (int p = 0; p < n; p++) {
      lhs[p] = heads.get(p);
      rhs[p] = productions.get(p);
      items += rhs[p].length + 1;
    }
    if (items > MAX_ITEMS) {
      throw new UnsupportedConstraintException(
          "the grammar is too large (" + items + " positions, at most " + MAX_ITEMS + ")");
    }
    List<List<Integer>> of = new ArrayList<>();
    for (int a = 0; a < nonterminals; a++) {
      of.add(new ArrayList<>());
    }
    for (int p = 0; p < n; p++) {
      of.get(lhs[p]).add(p);
    }
    this.productionsOf = new int[nonterminals][];
    for (int a = 0; a < nonterminals; a++) {
      productionsOf[a] = of.get(a).stream().mapToInt(Integer::intValue).toArray();
    }
    this.terminals = new long[terms.size()][];
    for (int t = 0; t < terms.size(); t++) {
      long[] w = terms.get(t).toLongArray();
      terminals[t] = java.util.Arrays.copyOf(w, 4);
    }
    this.itemBase = new int[n];
    this.itemProduction = new int[items];
    this.itemNext = new int[items];
    int i = 0;
    for (int p = 0; p < n; p++) {
      itemBase[p] = i;
      for (int d = 0; d <= rhs[p].length; d++, i++) {
        itemProduction[i] = p;
        itemNext[i] = d < rhs[p].length ? rhs[p][d] : COMPLETE;
      }
    }
    this.predictions = new int[nonterminals][];
    for (int a = 0; a < nonterminals; a++) {
      predictions[a] = new int[productionsOf[a].length];
      for (int k = 0; k < productionsOf[a].length; k++) {
        predictions[a][k] = itemBase[productionsOf[a][k]];
      }
    }
    this.nullable = fixpoint(true);
    boolean[] productive = fixpoint(false);
    for (int a = 0; a < nonterminals; a++) {
      if (!productive[a]) {
        throw new UnsupportedConstraintException(
            "grammar: the rule '"
                + names.get(a)
                + "' derives no finite string (every alternative recurses); give it an"
                + " alternative that ends");
      }
    }
  }

  /**
   * Per nonterminal, whether it derives the empty string ({@code empty}) or any finite string: the
   * least fixpoint over the productions.
   */
  private boolean[] fixpoint(boolean empty) {
    boolean[] out = new boolean[productionsOf.length];
    boolean changed = true;
    while (changed) {
      changed = false;
      for (int p = 0; p < rhs.length; p++) {
        if (out[lhs[p]]) {
          continue;
        }
        boolean all = true;
        for (int s : rhs[p]) {
          if (s >= 0 ? !out[s] : empty) {
            all = false;
            break;
          }
        }
        if (all) {
          out[lhs[p]] = true;
          changed = true;
        }
      }
    }
    return out;
  }

  /** The grammar of an EBNF text (see {@link EbnfParser}); its start rule is {@code root}. */
  static Grammar ofEbnf(String text) {
    Map<String, EbnfNode> rules = EbnfParser.parse(text);
    if (!rules.containsKey("root")) {
      throw new UnsupportedConstraintException(
          "grammar: there is no 'root' rule; the grammar starts at 'root ::= ...'");
    }
    return new Builder(text, rules).build();
  }

  /** Flattens EBNF rules into productions, from {@code root} (unreachable rules are dropped). */
  private static final class Builder {
    private final String text;
    private final Map<String, EbnfNode> rules;
    private final Map<String, Integer> ids = new HashMap<>();
    private final List<String> names = new ArrayList<>();
    private final List<int[]> productions = new ArrayList<>();
    private final List<Integer> heads = new ArrayList<>();
    private final List<BitSet> terms = new ArrayList<>();
    private final Map<BitSet, Integer> termIds = new HashMap<>();
    private final List<String> pending = new ArrayList<>();

    Builder(String text, Map<String, EbnfNode> rules) {
      this.text = text;
      this.rules = rules;
    }

    Grammar build() {
      int start = fresh("start");
      int root = rule("root", 0);
      add(start, new int[] {root});
      while (!pending.isEmpty()) {
        String name = pending.removeLast();
        int a = ids.get(name);
        for (int[] alt : alternatives(rules.get(name))) {
          add(a, alt);
        }
      }
      return new Grammar(productions, heads, names, terms);
    }

    private int rule(String name, int position) {
      Integer id = ids.get(name);
      if (id != null) {
        return id;
      }
      if (!rules.containsKey(name)) {
        throw new UnsupportedConstraintException(
            "grammar: the rule '"
                + name
                + "' used at "
                + EbnfParser.where(text, position)
                + " is not defined");
      }
      int a = fresh(name);
      ids.put(name, a);
      pending.add(name);
      return a;
    }

    private int fresh(String name) {
      names.add(name);
      return names.size() - 1;
    }

    private void add(int head, int[] body) {
      if (productions.size() >= MAX_ITEMS) {
        throw new UnsupportedConstraintException(
            "the grammar is too large (more than " + MAX_ITEMS + " productions)");
      }
      heads.add(head);
      productions.add(body);
    }

    private List<int[]> alternatives(EbnfNode n) {
      if (n instanceof EbnfNode.Alt(List<EbnfNode> options)) {
        List<int[]> out = new ArrayList<>();
        for (EbnfNode o : options) {
          out.addAll(alternatives(o));
        }
        return out;
      }
      List<Integer> seq = new ArrayList<>();
      sequence(n, seq);
      return List.of(seq.stream().mapToInt(Integer::intValue).toArray());
    }

    private void sequence(EbnfNode n, List<Integer> out) {
      if (n instanceof EbnfNode.Seq(List<EbnfNode> parts)) {
        for (EbnfNode p : parts) {
          sequence(p, out);
        }
      } else {
        out.add(symbol(n));
      }
    }

    private int symbol(EbnfNode n) {
      return switch (n) {
        case EbnfNode.Bytes(BitSet bytes) -> ~termIds.computeIfAbsent(bytes, this::newTerm);
        case EbnfNode.Ref(String name, int position) -> rule(name, position);
        case EbnfNode.Seq s -> group(s);
        case EbnfNode.Alt a -> group(a);
        case EbnfNode.Repeat(EbnfNode node, int min, int max) -> repeat(symbol(node), min, max);
      };
    }

    private int newTerm(BitSet bytes) {
      terms.add(bytes);
      return terms.size() - 1;
    }

    private int group(EbnfNode n) {
      int a = fresh("(group)");
      for (int[] alt : alternatives(n)) {
        add(a, alt);
      }
      return a;
    }

    /** {@code x{min,max}}: min copies of x, then a left-recursive star or nested optionals. */
    private int repeat(int x, int min, int max) {
      int tail;
      if (max < 0) {
        tail = fresh("(star)");
        add(tail, new int[0]);
        add(tail, new int[] {tail, x});
      } else {
        tail = -1;
        for (int k = 0; k < max - min; k++) {
          int opt = fresh("(optional)");
          add(opt, new int[0]);
          add(opt, tail < 0 ? new int[] {x} : new int[] {x, tail});
          tail = opt;
        }
      }
      int a = fresh("(repeat)");
      int[] body = new int[min + (tail < 0 ? 0 : 1)];
      java.util.Arrays.fill(body, 0, min, x);
      if (tail >= 0) {
        body[min] = tail;
      }
      add(a, body);
      return a;
    }
  }

  /** The start item: {@code S' -> . root}. */
  int startItem() {
    return itemBase[0];
  }

  /** The accepting item: {@code S' -> root .}. */
  int acceptItem() {
    return itemBase[0] + 1;
  }

  /** The symbol after the dot of {@code item}, or {@link #COMPLETE}. */
  int next(int item) {
    return itemNext[item];
  }

  /** The nonterminal an item's production defines. */
  int head(int item) {
    return lhs[itemProduction[item]];
  }

  /** The items {@code A -> . body} of a nonterminal's productions (shared; do not modify). */
  int[] predictions(int nonterminal) {
    return predictions[nonterminal];
  }

  /** Whether a nonterminal derives the empty string. */
  boolean nullable(int nonterminal) {
    return nullable[nonterminal];
  }

  /** Whether terminal {@code t} (the value {@code ~symbol}) holds byte {@code b}. */
  boolean matches(int t, int b) {
    return (terminals[t][b >>> 6] & (1L << b)) != 0;
  }

  /** Adds terminal {@code t}'s bytes to a 4-word byte set. */
  void addBytes(int t, long[] into) {
    for (int w = 0; w < 4; w++) {
      into[w] |= terminals[t][w];
    }
  }
}
