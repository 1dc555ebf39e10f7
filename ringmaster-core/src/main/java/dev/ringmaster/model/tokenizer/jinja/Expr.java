package dev.ringmaster.model.tokenizer.jinja;

import java.util.List;
import java.util.Map;

/** Expression nodes. Each carries its template line for error messages. */
sealed interface Expr {
  int line();

  record Literal(Object value, int line) implements Expr {}

  record Name(String name, int line) implements Expr {}

  record ListLiteral(List<Expr> items, int line) implements Expr {}

  record DictLiteral(List<Expr> keys, List<Expr> values, int line) implements Expr {}

  /** {@code obj.name}: attribute first, then item. */
  record GetAttr(Expr object, String name, int line) implements Expr {}

  /** {@code obj[key]}: item first, then attribute. */
  record GetItem(Expr object, Expr key, int line) implements Expr {}

  /** {@code obj[start:stop:step]}; absent parts are null. */
  record Slice(Expr object, Expr start, Expr stop, Expr step, int line) implements Expr {}

  record Call(Expr callee, List<Expr> args, Map<String, Expr> kwargs, int line) implements Expr {}

  /** {@code value | name(args)}. */
  record Filter(Expr value, String name, List<Expr> args, Map<String, Expr> kwargs, int line)
      implements Expr {}

  /** {@code value is [not] name(args)}. */
  record Test(Expr value, String name, List<Expr> args, boolean negated, int line)
      implements Expr {}

  record Unary(String op, Expr operand, int line) implements Expr {}

  record Binary(String op, Expr left, Expr right, int line) implements Expr {}

  /** {@code a if cond else b}; {@code otherwise} is null when there is no else. */
  record Conditional(Expr condition, Expr then, Expr otherwise, int line) implements Expr {}
}
