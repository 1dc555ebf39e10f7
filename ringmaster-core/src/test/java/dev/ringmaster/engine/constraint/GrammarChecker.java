package dev.ringmaster.engine.constraint;

import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Whether bytes are a sentence of EBNF rules, by memoised end positions over the rule trees: an
 * oracle independent of the Earley recogniser, for grammars without left recursion.
 */
final class GrammarChecker {
  private final Map<String, EbnfNode> rules;
  private final byte[] text;
  private final Map<String, Set<Integer>> memo = new HashMap<>();

  private GrammarChecker(Map<String, EbnfNode> rules, byte[] text) {
    this.rules = rules;
    this.text = text;
  }

  static boolean matches(String grammar, byte[] text) {
    GrammarChecker c = new GrammarChecker(EbnfParser.parse(grammar), text);
    return c.ends(new EbnfNode.Ref("root", 0), 0).contains(text.length);
  }

  private Set<Integer> ends(EbnfNode n, int pos) {
    Set<Integer> out = new HashSet<>();
    switch (n) {
      case EbnfNode.Bytes(java.util.BitSet bytes) -> {
        if (pos < text.length && bytes.get(text[pos] & 0xff)) {
          out.add(pos + 1);
        }
      }
      case EbnfNode.Seq(List<EbnfNode> parts) -> {
        Set<Integer> cur = Set.of(pos);
        for (EbnfNode p : parts) {
          Set<Integer> next = new HashSet<>();
          for (int q : cur) {
            next.addAll(ends(p, q));
          }
          cur = next;
        }
        out.addAll(cur);
      }
      case EbnfNode.Alt(List<EbnfNode> options) -> {
        for (EbnfNode o : options) {
          out.addAll(ends(o, pos));
        }
      }
      case EbnfNode.Repeat(EbnfNode node, int min, int max) -> {
        Set<Integer> cur = Set.of(pos);
        Set<Integer> seen = new HashSet<>();
        if (min == 0) {
          out.add(pos);
        }
        for (int k = 1; (max < 0 || k <= max) && !cur.isEmpty(); k++) {
          Set<Integer> next = new HashSet<>();
          for (int q : cur) {
            next.addAll(ends(node, q));
          }
          if (k >= min) {
            out.addAll(next);
          }
          if (max < 0 && k >= min) {
            next.removeAll(seen);
            seen.addAll(next);
          }
          cur = next;
        }
      }
      case EbnfNode.Ref(String name, int unused) -> {
        String key = name + "@" + pos;
        Set<Integer> m = memo.get(key);
        if (m == null) {
          m = ends(rules.get(name), pos);
          memo.put(key, m);
        }
        out.addAll(m);
      }
    }
    return out;
  }
}
