package dev.ringmaster.model.tokenizer.jinja;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Renders parsed statements and evaluates expressions. */
final class Interpreter {
  /** Thrown by {@code break} and {@code continue}, caught by the innermost loop. */
  private static final class LoopControl extends RuntimeException {
    private static final long serialVersionUID = 1L;
    final boolean isBreak;

    LoopControl(boolean isBreak) {
      super(null, null, false, false);
      this.isBreak = isBreak;
    }
  }

  private int loopDepth;

  void render(List<Stmt> body, Scope scope, StringBuilder out) {
    for (Stmt s : body) {
      execute(s, scope, out);
    }
  }

  private void execute(Stmt stmt, Scope scope, StringBuilder out) {
    switch (stmt) {
      case Stmt.Text t -> out.append(t.text());
      case Stmt.Output o -> out.append(Values.str(eval(o.expr(), scope)));
      case Stmt.If s -> {
        for (int i = 0; i < s.conditions().size(); i++) {
          if (Values.truthy(eval(s.conditions().get(i), scope))) {
            render(s.bodies().get(i), scope, out);
            return;
          }
        }
        render(s.otherwise(), scope, out);
      }
      case Stmt.For f -> executeFor(f, scope, out);
      case Stmt.Set s -> assign(s.targets(), eval(s.value(), scope), scope, s.line());
      case Stmt.SetAttr s -> {
        Object target = eval(s.object(), scope);
        if (!(target instanceof Namespace ns)) {
          throw new TemplateException(
              "cannot set attribute '" + s.attr() + "' on " + Values.typeName(target), s.line());
        }
        ns.attributes.put(s.attr(), eval(s.value(), scope));
      }
      case Stmt.SetBlock s -> {
        StringBuilder captured = new StringBuilder();
        render(s.body(), scope, captured);
        scope.set(s.target(), captured.toString());
      }
      case Stmt.Break b -> throw loopControl(true, b.line());
      case Stmt.Continue c -> throw loopControl(false, c.line());
      case Stmt.Block b -> render(b.body(), scope, out);
    }
  }

  private LoopControl loopControl(boolean isBreak, int line) {
    if (loopDepth == 0) {
      throw new TemplateException((isBreak ? "break" : "continue") + " outside a loop", line);
    }
    return new LoopControl(isBreak);
  }

  private void executeFor(Stmt.For f, Scope scope, StringBuilder out) {
    List<Object> items = Values.iterate(eval(f.iterable(), scope), f.line());
    Scope loopScope = new Scope(scope);
    if (f.filter() != null) {
      List<Object> kept = new ArrayList<>();
      for (Object item : items) {
        assign(f.targets(), item, loopScope, f.line());
        if (Values.truthy(eval(f.filter(), loopScope))) {
          kept.add(item);
        }
      }
      items = kept;
    }
    if (items.isEmpty()) {
      render(f.otherwise(), scope, out);
      return;
    }
    LoopInfo loop = new LoopInfo(items);
    loopScope.set("loop", loop);
    loopDepth++;
    try {
      for (int i = 0; i < items.size(); i++) {
        loop.index0 = i;
        assign(f.targets(), items.get(i), loopScope, f.line());
        try {
          render(f.body(), loopScope, out);
        } catch (LoopControl control) {
          if (control.isBreak) {
            break;
          }
        }
      }
    } finally {
      loopDepth--;
    }
  }

  private static void assign(List<String> targets, Object value, Scope scope, int line) {
    if (targets.size() == 1) {
      scope.set(targets.getFirst(), value);
      return;
    }
    List<Object> parts = Values.iterate(value, line);
    if (parts.size() != targets.size()) {
      throw new TemplateException(
          "cannot unpack " + parts.size() + " values into " + targets.size() + " names", line);
    }
    for (int i = 0; i < targets.size(); i++) {
      scope.set(targets.get(i), parts.get(i));
    }
  }

  Object eval(Expr expr, Scope scope) {
    return switch (expr) {
      case Expr.Literal l -> l.value();
      case Expr.Name n -> scope.get(n.name());
      case Expr.ListLiteral l -> {
        List<Object> out = new ArrayList<>(l.items().size());
        l.items().forEach(e -> out.add(eval(e, scope)));
        yield out;
      }
      case Expr.DictLiteral d -> {
        Map<Object, Object> out = new LinkedHashMap<>();
        for (int i = 0; i < d.keys().size(); i++) {
          out.put(eval(d.keys().get(i), scope), eval(d.values().get(i), scope));
        }
        yield out;
      }
      case Expr.GetAttr g -> Access.attribute(eval(g.object(), scope), g.name(), g.line());
      case Expr.GetItem g -> Access.item(eval(g.object(), scope), eval(g.key(), scope), g.line());
      case Expr.Slice s ->
          Access.slice(
              eval(s.object(), scope),
              evalOrNull(s.start(), scope),
              evalOrNull(s.stop(), scope),
              evalOrNull(s.step(), scope),
              s.line());
      case Expr.Call c -> call(c, scope);
      case Expr.Filter f ->
          Filters.apply(
              f.name(),
              eval(f.value(), scope),
              evalAll(f.args(), scope),
              evalKwargs(f.kwargs(), scope),
              f.line());
      case Expr.Test t ->
          Tests.apply(t.name(), eval(t.value(), scope), evalAll(t.args(), scope), t.line())
              != t.negated();
      case Expr.Unary u -> unary(u, scope);
      case Expr.Binary b -> binary(b, scope);
      case Expr.Conditional c -> {
        if (Values.truthy(eval(c.condition(), scope))) {
          yield eval(c.then(), scope);
        }
        yield c.otherwise() == null ? new Undefined("else branch") : eval(c.otherwise(), scope);
      }
    };
  }

  private Object evalOrNull(Expr e, Scope scope) {
    return e == null ? null : eval(e, scope);
  }

  private List<Object> evalAll(List<Expr> exprs, Scope scope) {
    List<Object> out = new ArrayList<>(exprs.size());
    exprs.forEach(e -> out.add(eval(e, scope)));
    return out;
  }

  private Map<String, Object> evalKwargs(Map<String, Expr> kwargs, Scope scope) {
    Map<String, Object> out = new LinkedHashMap<>();
    kwargs.forEach((k, v) -> out.put(k, eval(v, scope)));
    return out;
  }

  private Object call(Expr.Call c, Scope scope) {
    Object callee = eval(c.callee(), scope);
    if (callee instanceof JinjaFunction f) {
      return f.call(evalAll(c.args(), scope), evalKwargs(c.kwargs(), scope), c.line());
    }
    String name =
        switch (c.callee()) {
          case Expr.Name n -> n.name();
          case Expr.GetAttr g -> g.name();
          default -> "expression";
        };
    throw new TemplateException(
        "'" + name + "' is not a supported function (" + Values.typeName(callee) + ")", c.line());
  }

  private Object unary(Expr.Unary u, Scope scope) {
    Object v = eval(u.operand(), scope);
    return switch (u.op()) {
      case "not" -> !Values.truthy(v);
      case "-" ->
          switch (v) {
            case Long l -> -l;
            case Double d -> -d;
            default -> throw new TemplateException("bad operand for unary -", u.line());
          };
      default -> v;
    };
  }

  private Object binary(Expr.Binary b, Scope scope) {
    Object left = eval(b.left(), scope);
    switch (b.op()) {
      case "and" -> {
        return Values.truthy(left) ? eval(b.right(), scope) : left;
      }
      case "or" -> {
        return Values.truthy(left) ? left : eval(b.right(), scope);
      }
      default -> {}
    }
    Object right = eval(b.right(), scope);
    return switch (b.op()) {
      case "==" -> Values.equal(left, right);
      case "!=" -> !Values.equal(left, right);
      case "<" -> Values.compare(left, right, b.line()) < 0;
      case ">" -> Values.compare(left, right, b.line()) > 0;
      case "<=" -> Values.compare(left, right, b.line()) <= 0;
      case ">=" -> Values.compare(left, right, b.line()) >= 0;
      case "in" -> Access.contains(right, left, b.line());
      case "not in" -> !Access.contains(right, left, b.line());
      case "~" -> Values.str(left) + Values.str(right);
      default -> Arithmetic.apply(b.op(), left, right, b.line());
    };
  }
}
