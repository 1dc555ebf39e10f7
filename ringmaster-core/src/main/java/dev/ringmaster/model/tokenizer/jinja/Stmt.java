package dev.ringmaster.model.tokenizer.jinja;

import java.util.List;

/** Statement nodes of a parsed template. */
sealed interface Stmt {
  int line();

  record Text(String text, int line) implements Stmt {}

  record Output(Expr expr, int line) implements Stmt {}

  /** One {@code if} / {@code elif} chain: conditions.get(i) guards bodies.get(i). */
  record If(List<Expr> conditions, List<List<Stmt>> bodies, List<Stmt> otherwise, int line)
      implements Stmt {}

  /**
   * {@code for targets in iterable [if filter]}; {@code otherwise} runs when nothing was iterated.
   */
  record For(
      List<String> targets,
      Expr iterable,
      Expr filter,
      List<Stmt> body,
      List<Stmt> otherwise,
      int line)
      implements Stmt {}

  /** {@code set name = value} or {@code set a, b = value}. */
  record Set(List<String> targets, Expr value, int line) implements Stmt {}

  /** {@code set ns.attr = value}. */
  record SetAttr(Expr object, String attr, Expr value, int line) implements Stmt {}

  /** {@code set name %}...{% endset}: captures rendered text. */
  record SetBlock(String target, List<Stmt> body, int line) implements Stmt {}

  record Break(int line) implements Stmt {}

  record Continue(int line) implements Stmt {}

  /** transformers' {@code generation} block: rendered as its body. */
  record Block(List<Stmt> body, int line) implements Stmt {}
}
