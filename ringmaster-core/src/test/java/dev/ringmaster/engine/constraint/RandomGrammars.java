package dev.ringmaster.engine.constraint;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * Small random EBNF grammars from a seed: a few rules, each referring only to later rules or, in a
 * recursive rule, to itself behind an opening literal (so none is left-recursive and every one
 * derives a finite string), with literals, classes, groups, alternation and the quantifiers.
 */
final class RandomGrammars {
  private static final String[] LITERALS = {
    "a", "b", "ab", "(", ")", ",", "[", "]", "+", "x1", "é"
  };
  private static final String[] CLASSES = {"[a-c]", "[0-9]", "[^a-z\\n]", "[xyzé]"};
  private final Random rnd;

  RandomGrammars(long seed) {
    this.rnd = new Random(seed);
  }

  /** The next grammar's text. */
  String next() {
    int rules = 1 + rnd.nextInt(4);
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < rules; i++) {
      String name = i == 0 ? "root" : "r" + i;
      sb.append(name).append(" ::= ");
      if (i > 0 && rnd.nextInt(3) == 0) {
        // Recursion behind a literal: nested brackets or a right-recursive list.
        sb.append(
            rnd.nextBoolean()
                ? "\"[\" " + name + " \"]\" | " + expr(i, rules, 1)
                : expr(i, rules, 1) + " (\",\" " + name + ")?");
      } else {
        sb.append(expr(i, rules, 2));
      }
      sb.append('\n');
    }
    return sb.toString();
  }

  private String expr(int rule, int rules, int depth) {
    int alts = 1 + (rnd.nextInt(3) == 0 ? 1 : 0);
    List<String> options = new ArrayList<>();
    for (int a = 0; a < alts; a++) {
      int parts = 1 + rnd.nextInt(3);
      List<String> seq = new ArrayList<>();
      for (int p = 0; p < parts; p++) {
        seq.add(item(rule, rules, depth) + quantifier());
      }
      options.add(String.join(" ", seq));
    }
    return String.join(" | ", options);
  }

  private String item(int rule, int rules, int depth) {
    int k = rnd.nextInt(depth > 0 ? 5 : 3);
    return switch (k) {
      case 0 -> "\"" + LITERALS[rnd.nextInt(LITERALS.length)] + "\"";
      case 1 -> CLASSES[rnd.nextInt(CLASSES.length)];
      case 2 -> rule + 1 < rules ? "r" + (rule + 1 + rnd.nextInt(rules - rule - 1)) : "\"z\"";
      default -> "(" + expr(rule, rules, depth - 1) + ")";
    };
  }

  private String quantifier() {
    // Unbounded repeats are rare: a small model often loops in them until its budget runs out.
    return switch (rnd.nextInt(16)) {
      case 0, 1 -> "?";
      case 2 -> "*";
      case 3 -> "+";
      case 4, 5 -> "{1,3}";
      case 6 -> "{2}";
      case 7 -> "{0,2}";
      default -> "";
    };
  }
}
