package dev.ringmaster.model.tokenizer.jinja;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A parsed Jinja template. Parse once, render many times; rendering is thread-safe.
 *
 * <p>Globals: {@code raise_exception(message)} (fails the render with the message), {@code
 * namespace(...)}, {@code range(...)}. Missing variables are undefined: they print as nothing and
 * fail {@code is defined}.
 */
public final class Template {
  private final List<Stmt> body;

  private Template(List<Stmt> body) {
    this.body = body;
  }

  /**
   * Parses a template.
   *
   * @throws TemplateException on syntax errors and on constructs outside the supported subset
   */
  public static Template parse(String source) {
    return new Template(Parser.parse(source));
  }

  /**
   * Renders the template.
   *
   * @param variables top-level variables; Java maps, lists, strings, numbers and booleans are
   *     converted to their Python counterparts (null is None)
   * @throws TemplateException when rendering fails, including {@code raise_exception}
   */
  public String render(Map<String, ?> variables) {
    Scope globals = new Scope(null);
    globals.set("raise_exception", (JinjaFunction) Template::raiseException);
    globals.set("namespace", (JinjaFunction) Template::namespace);
    globals.set("range", (JinjaFunction) Template::range);
    Scope scope = new Scope(globals);
    variables.forEach((k, v) -> scope.set(k, Values.fromJava(v)));
    StringBuilder out = new StringBuilder();
    new Interpreter().render(body, scope, out);
    return out.toString();
  }

  private static Object raiseException(List<Object> args, Map<String, Object> kwargs, int line) {
    String message = args.isEmpty() ? "raise_exception called" : Values.str(args.getFirst());
    throw new TemplateException("template raised an exception: " + message, line);
  }

  private static Object namespace(List<Object> args, Map<String, Object> kwargs, int line) {
    Namespace ns = new Namespace();
    for (Object a : args) {
      if (a instanceof Map<?, ?> m) {
        m.forEach((k, v) -> ns.attributes.put(Values.str(k), v));
      }
    }
    ns.attributes.putAll(kwargs);
    return ns;
  }

  private static Object range(List<Object> args, Map<String, Object> kwargs, int line) {
    long start = 0;
    long stop;
    long step = 1;
    if (args.size() == 1) {
      stop = Values.asLong(args.get(0), line);
    } else if (args.size() >= 2) {
      start = Values.asLong(args.get(0), line);
      stop = Values.asLong(args.get(1), line);
      if (args.size() > 2) {
        step = Values.asLong(args.get(2), line);
      }
    } else {
      throw new TemplateException("range() needs arguments", line);
    }
    if (step == 0) {
      throw new TemplateException("range() step cannot be zero", line);
    }
    List<Object> out = new ArrayList<>();
    for (long i = start; step > 0 ? i < stop : i > stop; i += step) {
      out.add(i);
    }
    return out;
  }
}
