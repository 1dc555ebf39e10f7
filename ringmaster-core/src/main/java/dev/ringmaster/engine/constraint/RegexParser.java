package dev.ringmaster.engine.constraint;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;

/**
 * Parses a regular expression (the common subset of Python's and JavaScript's syntax: literals,
 * {@code .}, classes with ranges and negation, {@code \d \w \s} and their negations, groups {@code
 * (...)}, {@code (?:...)}, named groups, alternation, and the quantifiers {@code * + ? {n} {n,}
 * {n,m}}) into a byte-level {@link RegexNode}: code points become their UTF-8 bytes. The pattern
 * must match the whole output ({@code ^} and {@code $} are accepted and ignored). Lookaround,
 * backreferences, word boundaries, flags and Unicode properties are refused with an {@link
 * UnsupportedConstraintException} naming them.
 */
final class RegexParser {
  private static final int MAX_REPEAT = 1000;
  private final String src;
  private int pos;

  private RegexParser(String src) {
    this.src = src;
  }

  /** The syntax tree of {@code pattern}. */
  static RegexNode parse(String pattern) {
    RegexParser p = new RegexParser(pattern);
    RegexNode n = p.alternation();
    if (p.pos < pattern.length()) {
      throw p.error("unbalanced ')'");
    }
    return n;
  }

  private UnsupportedConstraintException error(String what) {
    return new UnsupportedConstraintException(
        "regex " + quote(src) + " at offset " + pos + ": " + what);
  }

  private static String quote(String s) {
    return "'" + (s.length() > 80 ? s.substring(0, 80) + "..." : s) + "'";
  }

  private boolean more() {
    return pos < src.length();
  }

  private int peek() {
    return src.codePointAt(pos);
  }

  private int next() {
    int c = src.codePointAt(pos);
    pos += Character.charCount(c);
    return c;
  }

  private RegexNode alternation() {
    List<RegexNode> options = new ArrayList<>();
    options.add(sequence());
    while (more() && peek() == '|') {
      pos++;
      options.add(sequence());
    }
    return options.size() == 1 ? options.getFirst() : new RegexNode.Alt(options);
  }

  private RegexNode sequence() {
    List<RegexNode> parts = new ArrayList<>();
    while (more() && peek() != '|' && peek() != ')') {
      RegexNode atom = atom();
      if (atom != null) {
        parts.add(quantified(atom));
      }
    }
    return parts.size() == 1 ? parts.getFirst() : new RegexNode.Seq(parts);
  }

  private RegexNode quantified(RegexNode atom) {
    while (more()) {
      int c = peek();
      int min;
      int max;
      if (c == '*') {
        pos++;
        min = 0;
        max = -1;
      } else if (c == '+') {
        pos++;
        min = 1;
        max = -1;
      } else if (c == '?') {
        pos++;
        min = 0;
        max = 1;
      } else if (c == '{' && isCounted()) {
        pos++;
        min = number();
        max = min;
        if (peek() == ',') {
          pos++;
          max = peek() == '}' ? -1 : number();
        }
        pos++; // '}'
        if (max >= 0 && max < min) {
          throw error("repetition {" + min + "," + max + "} has max < min");
        }
        if (min > MAX_REPEAT || max > MAX_REPEAT) {
          throw error("repetition counts above " + MAX_REPEAT + " are not supported");
        }
      } else {
        return atom;
      }
      if (more() && peek() == '?') {
        pos++; // lazy: the same language
      } else if (more() && peek() == '+') {
        throw error("possessive quantifiers are not supported");
      }
      atom = new RegexNode.Repeat(atom, min, max);
    }
    return atom;
  }

  private boolean isCounted() {
    int i = pos + 1;
    int digits = 0;
    while (i < src.length() && Character.isDigit(src.charAt(i))) {
      i++;
      digits++;
    }
    if (digits == 0) {
      return false;
    }
    if (i < src.length() && src.charAt(i) == ',') {
      i++;
      while (i < src.length() && Character.isDigit(src.charAt(i))) {
        i++;
      }
    }
    return i < src.length() && src.charAt(i) == '}';
  }

  private int number() {
    int start = pos;
    while (more() && Character.isDigit(src.charAt(pos))) {
      pos++;
    }
    try {
      return Integer.parseInt(src.substring(start, pos));
    } catch (NumberFormatException e) {
      throw error("repetition count too large");
    }
  }

  /** One atom, or null for an anchor. */
  private RegexNode atom() {
    int c = next();
    switch (c) {
      case '^', '$' -> {
        return null;
      }
      case '.' -> {
        return Utf8Ranges.of(CodePointSet.of('\n').complement());
      }
      case '[' -> {
        return Utf8Ranges.of(charClass());
      }
      case '(' -> {
        if (more() && peek() == '?') {
          pos++;
          int k = more() ? next() : -1;
          if (k == 'P' && more() && peek() == '<') {
            pos++;
            k = '<';
          }
          if (k == '<' && more() && peek() != '=' && peek() != '!') {
            int close = src.indexOf('>', pos);
            if (close < 0) {
              throw error("unterminated group name");
            }
            pos = close + 1;
          } else if (k != ':') {
            throw error(
                "group '(?" + Character.toString(k) + "' (lookaround or flags) is not supported");
          }
        }
        RegexNode inner = alternation();
        if (!more() || next() != ')') {
          throw error("missing ')'");
        }
        return inner;
      }
      case '*', '+', '?' -> throw error("nothing to repeat before '" + Character.toString(c) + "'");
      case '\\' -> {
        CodePointSet set = escape(false);
        return Utf8Ranges.of(set);
      }
      default -> {
        return RegexNode.literal(Character.toString(c).getBytes(StandardCharsets.UTF_8));
      }
    }
  }

  private CodePointSet charClass() {
    boolean negated = more() && peek() == '^';
    if (negated) {
      pos++;
    }
    CodePointSet set = new CodePointSet();
    boolean first = true;
    while (true) {
      if (!more()) {
        throw error("unterminated character class");
      }
      int c = next();
      if (c == ']' && !first) {
        break;
      }
      first = false;
      CodePointSet item;
      int lo;
      if (c == '\\') {
        item = escape(true);
        if (!item.isSingle()) {
          set.addAll(item);
          continue;
        }
        lo = item.single();
      } else if (c == '[' && more() && peek() == ':') {
        throw error("POSIX classes like [:alpha:] are not supported");
      } else {
        lo = c;
      }
      if (more() && peek() == '-' && pos + 1 < src.length() && src.charAt(pos + 1) != ']') {
        pos++;
        int hi = next();
        if (hi == '\\') {
          CodePointSet h = escape(true);
          if (!h.isSingle()) {
            throw error("a class like \\d cannot end a range");
          }
          hi = h.single();
        }
        if (hi < lo) {
          throw error("range out of order");
        }
        set.add(lo, hi);
      } else {
        set.add(lo, lo);
      }
    }
    return negated ? set.complement() : set;
  }

  /** The set an escape stands for (after the backslash). */
  private CodePointSet escape(boolean inClass) {
    if (!more()) {
      throw error("trailing backslash");
    }
    int c = next();
    return switch (c) {
      case 'd' -> CodePointSet.of('0', '9');
      case 'D' -> CodePointSet.of('0', '9').complement();
      case 'w' -> word();
      case 'W' -> word().complement();
      case 's' -> space();
      case 'S' -> space().complement();
      case 'n' -> CodePointSet.of('\n');
      case 'r' -> CodePointSet.of('\r');
      case 't' -> CodePointSet.of('\t');
      case 'f' -> CodePointSet.of('\f');
      case 'v' -> CodePointSet.of(0x0b);
      case '0' -> CodePointSet.of(0);
      case 'x' -> CodePointSet.of(hex(2));
      case 'u' -> CodePointSet.of(hex(4));
      case 'b' -> {
        if (inClass) {
          yield CodePointSet.of('\b');
        }
        throw error("word boundaries (\\b) are not supported");
      }
      case 'B', 'A', 'Z', 'z', 'G' ->
          throw error("the anchor \\" + Character.toString(c) + " is not supported");
      case 'p', 'P' -> throw error("Unicode property classes (\\p{...}) are not supported");
      default -> {
        if (c >= '1' && c <= '9') {
          throw error("backreferences are not supported");
        }
        if (Character.isLetter(c)) {
          throw error("unknown escape \\" + Character.toString(c));
        }
        yield CodePointSet.of(c);
      }
    };
  }

  private int hex(int digits) {
    if (pos + digits > src.length()) {
      throw error("truncated hex escape");
    }
    try {
      int v = Integer.parseInt(src.substring(pos, pos + digits), 16);
      pos += digits;
      return v;
    } catch (NumberFormatException e) {
      throw error("bad hex escape");
    }
  }

  private static CodePointSet word() {
    CodePointSet s = CodePointSet.of('a', 'z');
    s.add('A', 'Z');
    s.add('0', '9');
    s.add('_', '_');
    return s;
  }

  private static CodePointSet space() {
    CodePointSet s = CodePointSet.of(' ');
    s.add('\t', '\r'); // \t \n \v \f \r
    return s;
  }

  /** A byte set node for ASCII bytes, as a helper for other compilers. */
  static RegexNode asciiBytes(String chars) {
    BitSet b = new BitSet(256);
    for (int i = 0; i < chars.length(); i++) {
      b.set(chars.charAt(i));
    }
    return new RegexNode.ByteSet(b);
  }
}
