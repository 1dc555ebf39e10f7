package dev.ringmaster.engine.constraint;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Parses the EBNF grammars of SGLang's {@code ebnf} and vLLM's {@code guided_grammar} (the GBNF /
 * xgrammar notation): rules {@code name ::= body}, alternation {@code |}, grouping {@code ( )},
 * repetition {@code ?} {@code *} {@code +} {@code {m}} {@code {m,}} {@code {m,n}}, string literals
 * in double (or single) quotes, character classes {@code [a-z]} and {@code [^...]}, {@code .} for
 * any character, and {@code #} comments. The start rule is {@code root}. Escapes: backslash and one
 * of {@code n r t 0 \ " ' [ ] - ^ /}, {@code xHH}, {@code uHHHH} or {@code UHHHHHHHH}. Lookahead
 * assertions and other xgrammar extensions are refused with an {@link
 * UnsupportedConstraintException} naming them.
 */
final class EbnfParser {
  /** Bounded repetitions are expanded; refuse bounds above this. */
  static final int MAX_REPEAT = 1000;

  private final String src;
  private int pos;

  private EbnfParser(String src) {
    this.src = src;
  }

  /** The rules of a grammar in the order written, each name once. */
  static Map<String, EbnfNode> parse(String grammar) {
    EbnfParser p = new EbnfParser(grammar);
    Map<String, EbnfNode> rules = new LinkedHashMap<>();
    p.skipSpace();
    if (!p.more()) {
      throw new UnsupportedConstraintException(
          "the grammar is empty; it needs a 'root ::= ...' rule");
    }
    while (p.more()) {
      int at = p.pos;
      String name = p.name();
      if (name == null) {
        throw p.error("expected a rule name");
      }
      p.skipSpace();
      if (!p.src.startsWith("::=", p.pos)) {
        throw p.error("expected '::=' after the rule name '" + name + "'");
      }
      p.pos += 3;
      EbnfNode body = p.alternatives();
      p.skipSpace();
      if (p.more() && p.peek() == ')') {
        throw p.error("unbalanced ')'");
      }
      if (rules.putIfAbsent(name, body) != null) {
        p.pos = at;
        throw p.error("the rule '" + name + "' is defined twice");
      }
    }
    return rules;
  }

  private EbnfNode alternatives() {
    List<EbnfNode> options = new ArrayList<>();
    options.add(sequence());
    while (true) {
      skipSpace();
      if (more() && peek() == '|') {
        pos++;
        options.add(sequence());
      } else {
        break;
      }
    }
    return options.size() == 1 ? options.getFirst() : new EbnfNode.Alt(options);
  }

  private EbnfNode sequence() {
    List<EbnfNode> parts = new ArrayList<>();
    while (true) {
      skipSpace();
      if (!more() || peek() == '|' || peek() == ')' || atRuleStart()) {
        break;
      }
      EbnfNode item = primary();
      while (true) {
        skipSpace();
        if (!more()) {
          break;
        }
        char q = peek();
        if (q == '?') {
          pos++;
          item = new EbnfNode.Repeat(item, 0, 1);
        } else if (q == '*') {
          pos++;
          item = new EbnfNode.Repeat(item, 0, -1);
        } else if (q == '+') {
          pos++;
          item = new EbnfNode.Repeat(item, 1, -1);
        } else if (q == '{') {
          item = braces(item);
        } else {
          break;
        }
      }
      parts.add(item);
    }
    return parts.size() == 1 ? parts.getFirst() : new EbnfNode.Seq(parts);
  }

  private EbnfNode braces(EbnfNode item) {
    int at = pos++;
    int min = number();
    int max = min;
    if (more() && peek() == ',') {
      pos++;
      skipSpace();
      max = more() && peek() == '}' ? -1 : number();
    }
    skipSpace();
    if (!more() || peek() != '}') {
      pos = at;
      throw error("a repetition must look like {m}, {m,} or {m,n}");
    }
    pos++;
    if (max >= 0 && max < min) {
      pos = at;
      throw error("repetition {" + min + "," + max + "} has its bounds out of order");
    }
    if (Math.max(min, max) > MAX_REPEAT) {
      pos = at;
      throw error("repetition bounds above " + MAX_REPEAT + " are not supported");
    }
    return new EbnfNode.Repeat(item, min, max);
  }

  private int number() {
    skipSpace();
    int start = pos;
    while (more() && Character.isDigit(peek())) {
      pos++;
    }
    if (start == pos || pos - start > 6) {
      throw error("expected a repetition count");
    }
    return Integer.parseInt(src.substring(start, pos));
  }

  private EbnfNode primary() {
    char c = peek();
    if (c == '"' || c == '\'') {
      return literal();
    }
    if (c == '[') {
      pos++;
      return EbnfNode.of(Utf8Ranges.of(charClass()));
    }
    if (c == '.') {
      pos++;
      return EbnfNode.of(Utf8Ranges.of(CodePointSet.of(0, CodePointSet.MAX)));
    }
    if (c == '(') {
      if (src.startsWith("(=", pos) || src.startsWith("(!", pos)) {
        throw error("lookahead assertions are not supported");
      }
      pos++;
      EbnfNode inner = alternatives();
      skipSpace();
      if (!more() || peek() != ')') {
        throw error("missing ')'");
      }
      pos++;
      return inner;
    }
    int at = pos;
    String name = name();
    if (name != null) {
      return new EbnfNode.Ref(name, at);
    }
    throw error("unexpected '" + c + "'");
  }

  private EbnfNode literal() {
    int at = pos;
    char quote = src.charAt(pos++);
    StringBuilder sb = new StringBuilder();
    while (true) {
      if (!more()) {
        pos = at;
        throw error("unterminated string literal");
      }
      int c = src.codePointAt(pos);
      pos += Character.charCount(c);
      if (c == quote) {
        break;
      }
      if (c == '\\') {
        c = escape();
      }
      sb.appendCodePoint(c);
    }
    byte[] bytes = sb.toString().getBytes(StandardCharsets.UTF_8);
    List<EbnfNode> parts = new ArrayList<>(bytes.length);
    for (byte b : bytes) {
      java.util.BitSet s = new java.util.BitSet(256);
      s.set(b & 0xff);
      parts.add(new EbnfNode.Bytes(s));
    }
    return parts.size() == 1 ? parts.getFirst() : new EbnfNode.Seq(parts);
  }

  private CodePointSet charClass() {
    int at = pos - 1;
    boolean negated = more() && peek() == '^';
    if (negated) {
      pos++;
    }
    CodePointSet set = new CodePointSet();
    while (true) {
      if (!more()) {
        pos = at;
        throw error("unterminated character class");
      }
      int lo = classChar();
      if (lo < 0) {
        break;
      }
      if (more() && peek() == '-' && pos + 1 < src.length() && src.charAt(pos + 1) != ']') {
        pos++;
        int hi = classChar();
        if (hi < 0 || hi < lo) {
          pos = at;
          throw error("a character range out of order");
        }
        set.add(lo, hi);
      } else {
        set.add(lo, lo);
      }
    }
    return negated ? set.complement() : set;
  }

  /** The next class member, or -1 at the closing bracket. */
  private int classChar() {
    int c = src.codePointAt(pos);
    pos += Character.charCount(c);
    if (c == ']') {
      return -1;
    }
    return c == '\\' ? escape() : c;
  }

  private int escape() {
    if (!more()) {
      throw error("trailing backslash");
    }
    char c = src.charAt(pos++);
    return switch (c) {
      case 'n' -> '\n';
      case 'r' -> '\r';
      case 't' -> '\t';
      case '0' -> 0;
      case 'x' -> hex(2);
      case 'u' -> hex(4);
      case 'U' -> hex(8);
      case '\\', '"', '\'', '[', ']', '-', '^', '/' -> c;
      default -> {
        pos--;
        throw error("unknown escape \\" + c);
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
      if (v > CodePointSet.MAX) {
        throw error("escape beyond U+10FFFF");
      }
      return v;
    } catch (NumberFormatException e) {
      throw error("bad hex escape");
    }
  }

  /** Whether a new rule ({@code name ::=}) starts here. */
  private boolean atRuleStart() {
    int save = pos;
    String name = name();
    skipSpace();
    boolean rule = name != null && src.startsWith("::=", pos);
    pos = save;
    return rule;
  }

  private String name() {
    int start = pos;
    if (!more() || !(Character.isLetter(peek()) || peek() == '_')) {
      return null;
    }
    while (more() && (Character.isLetterOrDigit(peek()) || peek() == '_' || peek() == '-')) {
      pos++;
    }
    return src.substring(start, pos);
  }

  private void skipSpace() {
    while (more()) {
      char c = peek();
      if (c == '#') {
        while (more() && peek() != '\n') {
          pos++;
        }
      } else if (Character.isWhitespace(c)) {
        pos++;
      } else {
        break;
      }
    }
  }

  private boolean more() {
    return pos < src.length();
  }

  private char peek() {
    return src.charAt(pos);
  }

  private UnsupportedConstraintException error(String what) {
    return new UnsupportedConstraintException(
        "grammar: " + what + " at " + where(src, pos) + " (SGLang's EBNF: name ::= body)");
  }

  /** Line and column of an offset, for messages. */
  static String where(String src, int offset) {
    int line = 1;
    int col = 1;
    for (int i = 0; i < Math.min(offset, src.length()); i++) {
      if (src.charAt(i) == '\n') {
        line++;
        col = 1;
      } else {
        col++;
      }
    }
    return "line " + line + " column " + col;
  }
}
