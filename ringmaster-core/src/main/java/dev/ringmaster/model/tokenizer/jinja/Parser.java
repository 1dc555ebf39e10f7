package dev.ringmaster.model.tokenizer.jinja;

import dev.ringmaster.model.tokenizer.jinja.Token.Kind;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** A recursive-descent parser with Jinja's operator precedence. */
final class Parser {
  /** Statement keywords that end a body; the caller decides what to do with them. */
  private static final Set<String> BODY_ENDS =
      Set.of("elif", "else", "endif", "endfor", "endset", "endgeneration");

  private static final Set<String> COMPARISONS = Set.of("==", "!=", "<", ">", "<=", ">=");

  private final List<Token> tokens;
  private int pos;

  private Parser(List<Token> tokens) {
    this.tokens = tokens;
  }

  static List<Stmt> parse(String source) {
    Parser p = new Parser(Lexer.tokenize(source));
    List<Stmt> body = p.parseBody();
    if (p.peek().kind() != Kind.EOF) {
      Token t = p.peekAfterBlockBegin();
      throw new TemplateException("unexpected '{% " + t.text() + " %}'", t.line());
    }
    return body;
  }

  // ---- statements ----

  private List<Stmt> parseBody() {
    List<Stmt> out = new ArrayList<>();
    while (true) {
      Token t = peek();
      switch (t.kind()) {
        case EOF -> {
          return out;
        }
        case TEXT -> {
          pos++;
          out.add(new Stmt.Text(t.text(), t.line()));
        }
        case VAR_BEGIN -> {
          pos++;
          Expr e = parseExpression();
          expect(Kind.VAR_END, "}}");
          out.add(new Stmt.Output(e, t.line()));
        }
        case BLOCK_BEGIN -> {
          Token keyword = peekAfterBlockBegin();
          if (keyword.kind() == Kind.NAME && BODY_ENDS.contains(keyword.text())) {
            return out;
          }
          pos++;
          out.add(parseStatement());
        }
        default -> throw new TemplateException("unexpected token '" + t.text() + "'", t.line());
      }
    }
  }

  private Token peekAfterBlockBegin() {
    return pos + 1 < tokens.size() ? tokens.get(pos + 1) : peek();
  }

  private Stmt parseStatement() {
    Token keyword = next();
    if (keyword.kind() != Kind.NAME) {
      throw new TemplateException("expected a statement keyword", keyword.line());
    }
    int line = keyword.line();
    return switch (keyword.text()) {
      case "if" -> parseIf(line);
      case "for" -> parseFor(line);
      case "set" -> parseSet(line);
      case "break" -> {
        expect(Kind.BLOCK_END, "%}");
        yield new Stmt.Break(line);
      }
      case "continue" -> {
        expect(Kind.BLOCK_END, "%}");
        yield new Stmt.Continue(line);
      }
      case "generation" -> {
        expect(Kind.BLOCK_END, "%}");
        List<Stmt> body = parseBody();
        endTag("endgeneration", line);
        yield new Stmt.Block(body, line);
      }
      default ->
          throw new TemplateException(
              "unsupported Jinja construct '{% " + keyword.text() + " %}'", line);
    };
  }

  private Stmt parseIf(int line) {
    List<Expr> conditions = new ArrayList<>();
    List<List<Stmt>> bodies = new ArrayList<>();
    conditions.add(parseExpression());
    expect(Kind.BLOCK_END, "%}");
    bodies.add(parseBody());
    List<Stmt> otherwise = List.of();
    while (true) {
      expect(Kind.BLOCK_BEGIN, "{%");
      Token t = next();
      if (t.isName("elif")) {
        conditions.add(parseExpression());
        expect(Kind.BLOCK_END, "%}");
        bodies.add(parseBody());
      } else if (t.isName("else")) {
        expect(Kind.BLOCK_END, "%}");
        otherwise = parseBody();
        endTag("endif", line);
        break;
      } else if (t.isName("endif")) {
        expect(Kind.BLOCK_END, "%}");
        break;
      } else {
        throw new TemplateException("'{% if %}' closed by '{% " + t.text() + " %}'", t.line());
      }
    }
    return new Stmt.If(conditions, bodies, otherwise, line);
  }

  private Stmt parseFor(int line) {
    List<String> targets = new ArrayList<>();
    targets.add(expectName());
    while (peek().isOp(",")) {
      next();
      targets.add(expectName());
    }
    if (!next().isName("in")) {
      throw new TemplateException("expected 'in' in '{% for %}'", line);
    }
    Expr iterable = parseTernaryFree();
    Expr filter = null;
    if (peek().isName("if")) {
      next();
      filter = parseTernaryFree();
    }
    if (peek().isName("recursive")) {
      throw new TemplateException("unsupported Jinja construct 'recursive' loop", line);
    }
    expect(Kind.BLOCK_END, "%}");
    List<Stmt> body = parseBody();
    List<Stmt> otherwise = List.of();
    expect(Kind.BLOCK_BEGIN, "{%");
    Token t = next();
    if (t.isName("else")) {
      expect(Kind.BLOCK_END, "%}");
      otherwise = parseBody();
      endTag("endfor", line);
    } else if (t.isName("endfor")) {
      expect(Kind.BLOCK_END, "%}");
    } else {
      throw new TemplateException("'{% for %}' closed by '{% " + t.text() + " %}'", t.line());
    }
    return new Stmt.For(targets, iterable, filter, body, otherwise, line);
  }

  private Stmt parseSet(int line) {
    String first = expectName();
    if (peek().isOp(".")) {
      next();
      String attr = expectName();
      expectOp("=");
      Expr value = parseExpression();
      expect(Kind.BLOCK_END, "%}");
      return new Stmt.SetAttr(new Expr.Name(first, line), attr, value, line);
    }
    List<String> targets = new ArrayList<>(List.of(first));
    while (peek().isOp(",")) {
      next();
      targets.add(expectName());
    }
    if (peek().kind() == Kind.BLOCK_END && targets.size() == 1) {
      next();
      List<Stmt> body = parseBody();
      endTag("endset", line);
      return new Stmt.SetBlock(first, body, line);
    }
    expectOp("=");
    Expr value = parseExpression();
    expect(Kind.BLOCK_END, "%}");
    return new Stmt.Set(targets, value, line);
  }

  private void endTag(String name, int openLine) {
    expect(Kind.BLOCK_BEGIN, "{%");
    Token t = next();
    if (!t.isName(name)) {
      throw new TemplateException(
          "expected '{% " + name + " %}' for the block opened on line " + openLine, t.line());
    }
    expect(Kind.BLOCK_END, "%}");
  }

  // ---- expressions, lowest precedence first ----

  private Expr parseExpression() {
    Expr value = parseOr();
    while (peek().isName("if")) {
      int line = next().line();
      Expr condition = parseOr();
      Expr otherwise = null;
      if (peek().isName("else")) {
        next();
        otherwise = parseExpression();
      }
      value = new Expr.Conditional(condition, value, otherwise, line);
    }
    return value;
  }

  /** An expression without a trailing {@code if}, as in {@code for x in xs if cond}. */
  private Expr parseTernaryFree() {
    return parseOr();
  }

  private Expr parseOr() {
    Expr left = parseAnd();
    while (peek().isName("or")) {
      int line = next().line();
      left = new Expr.Binary("or", left, parseAnd(), line);
    }
    return left;
  }

  private Expr parseAnd() {
    Expr left = parseNot();
    while (peek().isName("and")) {
      int line = next().line();
      left = new Expr.Binary("and", left, parseNot(), line);
    }
    return left;
  }

  private Expr parseNot() {
    if (peek().isName("not")) {
      int line = next().line();
      return new Expr.Unary("not", parseNot(), line);
    }
    return parseCompare();
  }

  private Expr parseCompare() {
    Expr left = parseMath1();
    while (true) {
      Token t = peek();
      if (t.kind() == Kind.OP && COMPARISONS.contains(t.text())) {
        next();
        left = new Expr.Binary(t.text(), left, parseMath1(), t.line());
      } else if (t.isName("in")) {
        next();
        left = new Expr.Binary("in", left, parseMath1(), t.line());
      } else if (t.isName("not") && tokens.get(pos + 1).isName("in")) {
        next();
        next();
        left = new Expr.Binary("not in", left, parseMath1(), t.line());
      } else {
        return left;
      }
    }
  }

  private Expr parseMath1() {
    Expr left = parseConcat();
    while (peek().isOp("+") || peek().isOp("-")) {
      Token t = next();
      left = new Expr.Binary(t.text(), left, parseConcat(), t.line());
    }
    return left;
  }

  private Expr parseConcat() {
    Expr left = parseMath2();
    while (peek().isOp("~")) {
      int line = next().line();
      left = new Expr.Binary("~", left, parseMath2(), line);
    }
    return left;
  }

  private Expr parseMath2() {
    Expr left = parsePow();
    while (peek().isOp("*") || peek().isOp("/") || peek().isOp("//") || peek().isOp("%")) {
      Token t = next();
      left = new Expr.Binary(t.text(), left, parsePow(), t.line());
    }
    return left;
  }

  private Expr parsePow() {
    Expr left = parseUnary(true);
    while (peek().isOp("**")) {
      int line = next().line();
      left = new Expr.Binary("**", left, parseUnary(true), line);
    }
    return left;
  }

  private Expr parseUnary(boolean withFilters) {
    Token t = peek();
    Expr e;
    if (t.isOp("-") || t.isOp("+")) {
      next();
      e = new Expr.Unary(t.text(), parseUnary(false), t.line());
    } else {
      e = parsePrimary();
    }
    e = parsePostfix(e);
    return withFilters ? parseFilters(e) : e;
  }

  private Expr parsePrimary() {
    Token t = next();
    int line = t.line();
    switch (t.kind()) {
      case NAME -> {
        return switch (t.text()) {
          case "true", "True" -> new Expr.Literal(Boolean.TRUE, line);
          case "false", "False" -> new Expr.Literal(Boolean.FALSE, line);
          case "none", "None" -> new Expr.Literal(null, line);
          default -> new Expr.Name(t.text(), line);
        };
      }
      case STRING -> {
        StringBuilder sb = new StringBuilder(t.text());
        while (peek().kind() == Kind.STRING) {
          sb.append(next().text());
        }
        return new Expr.Literal(sb.toString(), line);
      }
      case INTEGER -> {
        return new Expr.Literal(Long.parseLong(t.text()), line);
      }
      case FLOAT -> {
        return new Expr.Literal(Double.parseDouble(t.text()), line);
      }
      case OP -> {
        switch (t.text()) {
          case "(" -> {
            if (peek().isOp(")")) {
              next();
              return new Expr.ListLiteral(List.of(), line);
            }
            Expr inner = parseExpression();
            if (peek().isOp(",")) {
              List<Expr> items = new ArrayList<>(List.of(inner));
              while (peek().isOp(",")) {
                next();
                if (peek().isOp(")")) {
                  break;
                }
                items.add(parseExpression());
              }
              inner = new Expr.ListLiteral(items, line);
            }
            expectOp(")");
            return inner;
          }
          case "[" -> {
            List<Expr> items = new ArrayList<>();
            while (!peek().isOp("]")) {
              items.add(parseExpression());
              if (!peek().isOp(",")) {
                break;
              }
              next();
            }
            expectOp("]");
            return new Expr.ListLiteral(items, line);
          }
          case "{" -> {
            List<Expr> keys = new ArrayList<>();
            List<Expr> values = new ArrayList<>();
            while (!peek().isOp("}")) {
              keys.add(parseExpression());
              expectOp(":");
              values.add(parseExpression());
              if (!peek().isOp(",")) {
                break;
              }
              next();
            }
            expectOp("}");
            return new Expr.DictLiteral(keys, values, line);
          }
          default -> {}
        }
      }
      default -> {}
    }
    throw new TemplateException("unexpected '" + describe(t) + "' in expression", line);
  }

  private Expr parsePostfix(Expr e) {
    while (true) {
      Token t = peek();
      if (t.isOp(".")) {
        next();
        Token name = next();
        if (name.kind() == Kind.NAME) {
          e = new Expr.GetAttr(e, name.text(), t.line());
        } else if (name.kind() == Kind.INTEGER) {
          e =
              new Expr.GetItem(
                  e, new Expr.Literal(Long.parseLong(name.text()), t.line()), t.line());
        } else {
          throw new TemplateException("expected a name after '.'", t.line());
        }
      } else if (t.isOp("[")) {
        next();
        e = parseSubscript(e, t.line());
      } else if (t.isOp("(")) {
        e = parseCall(e);
      } else {
        return e;
      }
    }
  }

  private Expr parseSubscript(Expr object, int line) {
    Expr[] parts = new Expr[3];
    int part = 0;
    boolean slice = false;
    while (!peek().isOp("]")) {
      if (peek().isOp(":")) {
        next();
        slice = true;
        part++;
        if (part > 2) {
          throw new TemplateException("too many ':' in slice", line);
        }
        continue;
      }
      parts[part] = parseExpression();
    }
    expectOp("]");
    if (!slice) {
      if (parts[0] == null) {
        throw new TemplateException("empty subscript", line);
      }
      return new Expr.GetItem(object, parts[0], line);
    }
    return new Expr.Slice(object, parts[0], parts[1], parts[2], line);
  }

  private Expr parseCall(Expr callee) {
    int line = next().line();
    List<Expr> args = new ArrayList<>();
    Map<String, Expr> kwargs = new LinkedHashMap<>();
    parseArgs(args, kwargs);
    return new Expr.Call(callee, args, kwargs, line);
  }

  /** Parses {@code a, b, k=v)} after an opening parenthesis, consuming the closing one. */
  private void parseArgs(List<Expr> args, Map<String, Expr> kwargs) {
    while (!peek().isOp(")")) {
      if (peek().kind() == Kind.NAME && tokens.get(pos + 1).isOp("=")) {
        String name = next().text();
        next();
        kwargs.put(name, parseExpression());
      } else {
        args.add(parseExpression());
      }
      if (!peek().isOp(",")) {
        break;
      }
      next();
    }
    expectOp(")");
  }

  private Expr parseFilters(Expr e) {
    while (true) {
      Token t = peek();
      if (t.isOp("|")) {
        next();
        String name = expectName();
        List<Expr> args = new ArrayList<>();
        Map<String, Expr> kwargs = new LinkedHashMap<>();
        if (peek().isOp("(")) {
          next();
          parseArgs(args, kwargs);
        }
        e = new Expr.Filter(e, name, args, kwargs, t.line());
      } else if (t.isName("is")) {
        next();
        boolean negated = false;
        if (peek().isName("not")) {
          next();
          negated = true;
        }
        String name = expectName();
        List<Expr> args = new ArrayList<>();
        if (peek().isOp("(")) {
          next();
          parseArgs(args, new LinkedHashMap<>());
        } else if (startsTestArgument(peek())) {
          args.add(parsePostfix(parsePrimary()));
        }
        e = new Expr.Test(e, name, args, negated, t.line());
      } else if (t.isOp("(")) {
        e = parseCall(e);
      } else {
        return e;
      }
    }
  }

  private static boolean startsTestArgument(Token t) {
    return switch (t.kind()) {
      case STRING, INTEGER, FLOAT -> true;
      case NAME ->
          !Set.of("else", "or", "and", "if", "is", "in", "not", "recursive").contains(t.text());
      case OP -> t.text().equals("[") || t.text().equals("{");
      default -> false;
    };
  }

  // ---- token helpers ----

  private Token peek() {
    return tokens.get(pos);
  }

  private Token next() {
    Token t = tokens.get(pos);
    if (t.kind() != Kind.EOF) {
      pos++;
    }
    return t;
  }

  private void expect(Kind kind, String what) {
    Token t = next();
    if (t.kind() != kind) {
      throw new TemplateException(
          "expected '" + what + "' but found '" + describe(t) + "'", t.line());
    }
  }

  private void expectOp(String op) {
    Token t = next();
    if (!t.isOp(op)) {
      throw new TemplateException(
          "expected '" + op + "' but found '" + describe(t) + "'", t.line());
    }
  }

  private String expectName() {
    Token t = next();
    if (t.kind() != Kind.NAME) {
      throw new TemplateException("expected a name but found '" + describe(t) + "'", t.line());
    }
    return t.text();
  }

  private static String describe(Token t) {
    return switch (t.kind()) {
      case VAR_END -> "}}";
      case BLOCK_END -> "%}";
      case VAR_BEGIN -> "{{";
      case BLOCK_BEGIN -> "{%";
      case EOF -> "end of template";
      case STRING -> "'" + t.text() + "'";
      default -> t.text();
    };
  }
}
