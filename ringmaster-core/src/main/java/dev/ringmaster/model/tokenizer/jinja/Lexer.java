package dev.ringmaster.model.tokenizer.jinja;

import java.util.ArrayList;
import java.util.List;

/**
 * Splits a template into text and tag tokens, applying Jinja's whitespace rules: {@code -} in a tag
 * strips all whitespace on that side; otherwise {@code trim_blocks} drops the first newline after a
 * block or comment tag and {@code lstrip_blocks} drops spaces and tabs between the start of a line
 * and a block or comment tag ({@code +} turns either off for that tag).
 */
final class Lexer {
  private static final String[] OPERATORS = {
    "**", "//", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<", ">", "=", "(", ")", "[",
    "]", "{", "}", ",", ".", ":", "|"
  };

  private final String src;
  private final List<Token> tokens = new ArrayList<>();
  private int pos;
  private int line = 1;

  private Lexer(String src) {
    this.src = src;
  }

  static List<Token> tokenize(String source) {
    Lexer lexer = new Lexer(source);
    lexer.run();
    return lexer.tokens;
  }

  private void run() {
    boolean stripNextText = false; // the previous tag ended with '-'
    boolean trimNextNewline = false; // the previous tag was a block or comment (trim_blocks)
    while (pos < src.length()) {
      int tag = nextTagStart(pos);
      int textEnd = tag < 0 ? src.length() : tag;
      String text = src.substring(pos, textEnd);
      int textLine = line;
      advanceTo(textEnd);
      char kind = tag < 0 ? 0 : src.charAt(tag + 1);
      char marker = tag >= 0 && tag + 2 < src.length() ? src.charAt(tag + 2) : 0;
      if (stripNextText) {
        text = stripLeading(text);
      } else if (trimNextNewline) {
        text =
            text.startsWith("\r\n")
                ? text.substring(2)
                : text.startsWith("\n") ? text.substring(1) : text;
      }
      if (marker == '-') {
        text = stripTrailing(text);
      } else if ((kind == '%' || kind == '#') && marker != '+') {
        text = lstripBlock(text, textEnd);
      }
      if (!text.isEmpty()) {
        tokens.add(new Token(Token.Kind.TEXT, text, textLine));
      }
      if (tag < 0) {
        break;
      }
      int bodyStart = tag + 2 + (marker == '-' || marker == '+' ? 1 : 0);
      advanceTo(bodyStart);
      if (kind == '#') {
        int end = src.indexOf("#}", pos);
        if (end < 0) {
          throw new TemplateException("unclosed comment", line);
        }
        stripNextText = end > pos && src.charAt(end - 1) == '-';
        trimNextNewline = true;
        advanceTo(end + 2);
        continue;
      }
      boolean block = kind == '%';
      tokens.add(new Token(block ? Token.Kind.BLOCK_BEGIN : Token.Kind.VAR_BEGIN, "", line));
      char closer = block ? '%' : '}';
      stripNextText = lexTag(closer, block ? Token.Kind.BLOCK_END : Token.Kind.VAR_END);
      trimNextNewline = block;
    }
    tokens.add(new Token(Token.Kind.EOF, "", line));
  }

  /** The position of the next {@code {{ {% {#} at or after {@code from}, or -1. */
  private int nextTagStart(int from) {
    int i = from;
    while (true) {
      int b = src.indexOf('{', i);
      if (b < 0 || b + 1 >= src.length()) {
        return -1;
      }
      char c = src.charAt(b + 1);
      if (c == '{' || c == '%' || c == '#') {
        return b;
      }
      i = b + 1;
    }
  }

  /** Lexes expression tokens up to the closing delimiter; returns whether it was {@code -X}}. */
  private boolean lexTag(char closer, Token.Kind endKind) {
    while (true) {
      skipSpaces();
      if (pos >= src.length()) {
        throw new TemplateException("unclosed tag", line);
      }
      for (String prefix : new String[] {"-", "+", ""}) {
        if (src.startsWith(prefix + closer + "}", pos)) {
          advanceTo(pos + prefix.length() + 2);
          tokens.add(new Token(endKind, "", line));
          return prefix.equals("-");
        }
      }
      char c = src.charAt(pos);
      if (Character.isLetter(c) || c == '_') {
        int start = pos;
        while (pos < src.length()
            && (Character.isLetterOrDigit(src.charAt(pos)) || src.charAt(pos) == '_')) {
          pos++;
        }
        tokens.add(new Token(Token.Kind.NAME, src.substring(start, pos), line));
      } else if (Character.isDigit(c)) {
        lexNumber();
      } else if (c == '\'' || c == '"') {
        lexString(c);
      } else {
        lexOperator();
      }
    }
  }

  private void lexNumber() {
    int start = pos;
    while (pos < src.length() && (Character.isDigit(src.charAt(pos)) || src.charAt(pos) == '_')) {
      pos++;
    }
    boolean isFloat = false;
    if (pos + 1 < src.length()
        && src.charAt(pos) == '.'
        && Character.isDigit(src.charAt(pos + 1))) {
      isFloat = true;
      pos++;
      while (pos < src.length() && Character.isDigit(src.charAt(pos))) {
        pos++;
      }
    }
    if (pos < src.length() && (src.charAt(pos) == 'e' || src.charAt(pos) == 'E')) {
      int save = pos;
      pos++;
      if (pos < src.length() && (src.charAt(pos) == '+' || src.charAt(pos) == '-')) {
        pos++;
      }
      if (pos < src.length() && Character.isDigit(src.charAt(pos))) {
        isFloat = true;
        while (pos < src.length() && Character.isDigit(src.charAt(pos))) {
          pos++;
        }
      } else {
        pos = save;
      }
    }
    String text = src.substring(start, pos).replace("_", "");
    tokens.add(new Token(isFloat ? Token.Kind.FLOAT : Token.Kind.INTEGER, text, line));
  }

  private void lexString(char quote) {
    int startLine = line;
    StringBuilder sb = new StringBuilder();
    pos++;
    while (true) {
      if (pos >= src.length()) {
        throw new TemplateException("unterminated string literal", startLine);
      }
      char c = src.charAt(pos++);
      if (c == quote) {
        break;
      }
      if (c == '\n') {
        line++;
      }
      if (c != '\\' || pos >= src.length()) {
        sb.append(c);
        continue;
      }
      char e = src.charAt(pos++);
      switch (e) {
        case 'n' -> sb.append('\n');
        case 't' -> sb.append('\t');
        case 'r' -> sb.append('\r');
        case '\\', '\'', '"' -> sb.append(e);
        case 'u' -> {
          sb.append((char) Integer.parseInt(src.substring(pos, pos + 4), 16));
          pos += 4;
        }
        case 'x' -> {
          sb.append((char) Integer.parseInt(src.substring(pos, pos + 2), 16));
          pos += 2;
        }
        default -> sb.append('\\').append(e);
      }
    }
    tokens.add(new Token(Token.Kind.STRING, sb.toString(), startLine));
  }

  private void lexOperator() {
    for (String op : OPERATORS) {
      if (src.startsWith(op, pos)) {
        tokens.add(new Token(Token.Kind.OP, op, line));
        pos += op.length();
        return;
      }
    }
    throw new TemplateException("unexpected character '" + src.charAt(pos) + "' in tag", line);
  }

  private void skipSpaces() {
    while (pos < src.length() && Character.isWhitespace(src.charAt(pos))) {
      if (src.charAt(pos) == '\n') {
        line++;
      }
      pos++;
    }
  }

  private void advanceTo(int target) {
    for (int i = pos; i < target; i++) {
      if (src.charAt(i) == '\n') {
        line++;
      }
    }
    pos = target;
  }

  private static String stripLeading(String s) {
    int i = 0;
    while (i < s.length() && Character.isWhitespace(s.charAt(i))) {
      i++;
    }
    return s.substring(i);
  }

  private static String stripTrailing(String s) {
    int i = s.length();
    while (i > 0 && Character.isWhitespace(s.charAt(i - 1))) {
      i--;
    }
    return s.substring(0, i);
  }

  /** lstrip_blocks: drop spaces and tabs before a tag when only they separate it from a newline. */
  private String lstripBlock(String text, int tagPos) {
    int i = text.length();
    while (i > 0 && (text.charAt(i - 1) == ' ' || text.charAt(i - 1) == '\t')) {
      i--;
    }
    boolean atLineStart = i > 0 ? text.charAt(i - 1) == '\n' : isLineStart(tagPos - text.length());
    return atLineStart ? text.substring(0, i) : text;
  }

  /** Whether a position in the source is at the start of a line. */
  private boolean isLineStart(int p) {
    return p == 0 || src.charAt(p - 1) == '\n';
  }
}
