package dev.ringmaster.model.tokenizer.jinja;

import java.util.List;
import java.util.Map;

/** Jinja tests: {@code value is name(args)}. */
final class Tests {
  private Tests() {}

  static boolean apply(String name, Object v, List<Object> args, int line) {
    return switch (name) {
      case "defined" -> !(v instanceof Undefined);
      case "undefined" -> v instanceof Undefined;
      case "none" -> v == null;
      case "string" -> v instanceof String;
      case "number" -> v instanceof Long || v instanceof Double;
      case "integer" -> v instanceof Long;
      case "float" -> v instanceof Double;
      case "boolean" -> v instanceof Boolean;
      case "true" -> Boolean.TRUE.equals(v);
      case "false" -> Boolean.FALSE.equals(v);
      case "mapping" -> v instanceof Map<?, ?> || v instanceof Namespace;
      case "sequence" -> v instanceof List<?> || v instanceof String || v instanceof Map<?, ?>;
      case "iterable" -> v instanceof List<?> || v instanceof String || v instanceof Map<?, ?>;
      case "callable" -> v instanceof JinjaFunction;
      case "even" -> Values.asLong(v, line) % 2 == 0;
      case "odd" -> Values.asLong(v, line) % 2 != 0;
      case "divisibleby" ->
          Values.asLong(v, line) % Values.asLong(arg(args, name, line), line) == 0;
      case "eq", "equalto", "==" -> Values.equal(v, arg(args, name, line));
      case "ne", "!=" -> !Values.equal(v, arg(args, name, line));
      case "lt", "lessthan", "<" -> Values.compare(v, arg(args, name, line), line) < 0;
      case "gt", "greaterthan", ">" -> Values.compare(v, arg(args, name, line), line) > 0;
      case "le", "<=" -> Values.compare(v, arg(args, name, line), line) <= 0;
      case "ge", ">=" -> Values.compare(v, arg(args, name, line), line) >= 0;
      case "in" -> Access.contains(arg(args, name, line), v, line);
      case "sameas" -> v == arg(args, name, line) || Values.equal(v, arg(args, name, line));
      case "lower" -> v instanceof String s && s.equals(s.toLowerCase(java.util.Locale.ROOT));
      case "upper" -> v instanceof String s && s.equals(s.toUpperCase(java.util.Locale.ROOT));
      default -> throw new TemplateException("unsupported Jinja test 'is " + name + "'", line);
    };
  }

  private static Object arg(List<Object> args, String test, int line) {
    if (args.isEmpty()) {
      throw new TemplateException("test '" + test + "' needs an argument", line);
    }
    return args.get(0);
  }
}
