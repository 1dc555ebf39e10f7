package dev.ringmaster.model.tokenizer.jinja;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** Jinja filters: {@code value | name(args)}. */
final class Filters {
  private Filters() {}

  static Object apply(
      String name, Object v, List<Object> args, Map<String, Object> kwargs, int line) {
    return switch (name) {
      case "trim" ->
          Values.strip(Values.str(v), args.isEmpty() ? null : Values.str(args.get(0)), true, true);
      case "length", "count" -> Values.length(v, line);
      case "string" -> Values.str(v);
      case "tojson" -> PyJson.dumps(v, indent(args, kwargs, line), line);
      case "default", "d" -> {
        Object fallback = args.isEmpty() ? "" : args.get(0);
        boolean onFalsy =
            args.size() > 1 && Values.truthy(args.get(1)) || Values.truthy(kwargs.get("boolean"));
        yield v instanceof Undefined || (onFalsy && !Values.truthy(v)) ? fallback : v;
      }
      case "upper" -> Values.str(v).toUpperCase(Locale.ROOT);
      case "lower" -> Values.str(v).toLowerCase(Locale.ROOT);
      case "title" -> Methods.title(Values.str(v));
      case "capitalize" -> Methods.capitalize(Values.str(v));
      case "first" -> {
        List<Object> items = Values.iterate(v, line);
        yield items.isEmpty() ? new Undefined("first") : items.getFirst();
      }
      case "last" -> {
        List<Object> items = Values.iterate(v, line);
        yield items.isEmpty() ? new Undefined("last") : items.getLast();
      }
      case "join" -> {
        String sep = args.isEmpty() ? "" : Values.str(args.get(0));
        Object attribute = args.size() > 1 ? args.get(1) : kwargs.get("attribute");
        List<String> parts = new ArrayList<>();
        for (Object item : Values.iterate(v, line)) {
          Object x = attribute == null ? item : Access.item(item, attribute, line);
          parts.add(Values.str(x));
        }
        yield String.join(sep, parts);
      }
      case "replace" ->
          Values.str(v)
              .replace(
                  Values.str(Methods.arg(args, 0, name, line)),
                  Values.str(Methods.arg(args, 1, name, line)));
      case "list" -> Values.iterate(v, line);
      case "reverse" -> {
        if (v instanceof String s) {
          yield new StringBuilder(s).reverse().toString();
        }
        List<Object> items = Values.iterate(v, line);
        Collections.reverse(items);
        yield items;
      }
      case "unique" -> new ArrayList<>(new LinkedHashSet<>(Values.iterate(v, line)));
      case "int" -> toInt(v);
      case "float" -> toFloat(v);
      case "abs" ->
          v instanceof Long l ? (Object) Math.abs(l) : (Object) Math.abs(Values.asDouble(v));
      case "items" ->
          v instanceof Map<?, ?> m
              ? Methods.ofDict(m, "items").call(List.of(), Map.of(), line)
              : List.of();
      case "safe", "e", "escape" -> v;
      case "selectattr", "rejectattr" -> selectAttr(v, args, name.equals("selectattr"), line);
      case "select", "reject" -> select(v, args, name.equals("select"), line);
      case "map" -> map(v, args, kwargs, line);
      case "indent" -> indent(Values.str(v), args, kwargs);
      case "dictsort" -> {
        if (!(v instanceof Map<?, ?> m)) {
          throw new TemplateException("dictsort needs a dict", line);
        }
        List<Object> keys = new ArrayList<>(m.keySet());
        keys.sort((a, b) -> Values.compare(a, b, line));
        List<Object> out = new ArrayList<>();
        keys.forEach(k -> out.add(java.util.Arrays.asList(k, m.get(k))));
        yield out;
      }
      default -> throw new TemplateException("unsupported Jinja filter '|" + name + "'", line);
    };
  }

  private static Integer indent(List<Object> args, Map<String, Object> kwargs, int line) {
    Object indent = args.isEmpty() ? kwargs.get("indent") : args.get(0);
    return indent == null ? null : (int) Values.asLong(indent, line);
  }

  private static Object toInt(Object v) {
    try {
      return switch (v) {
        case Long l -> l;
        case Double d -> (long) d.doubleValue();
        case Boolean b -> b ? 1L : 0L;
        case String s -> Long.parseLong(s.strip());
        default -> 0L;
      };
    } catch (NumberFormatException e) {
      return 0L;
    }
  }

  private static Object toFloat(Object v) {
    try {
      return switch (v) {
        case Long l -> l.doubleValue();
        case Double d -> d;
        case String s -> Double.parseDouble(s.strip());
        default -> 0.0;
      };
    } catch (NumberFormatException e) {
      return 0.0;
    }
  }

  private static List<Object> selectAttr(Object v, List<Object> args, boolean keep, int line) {
    String attr = Values.str(Methods.arg(args, 0, "selectattr", line));
    List<Object> out = new ArrayList<>();
    for (Object item : Values.iterate(v, line)) {
      Object value = Access.item(item, attr, line);
      boolean pass =
          args.size() > 1
              ? Tests.apply(Values.str(args.get(1)), value, args.subList(2, args.size()), line)
              : Values.truthy(value);
      if (pass == keep) {
        out.add(item);
      }
    }
    return out;
  }

  private static List<Object> select(Object v, List<Object> args, boolean keep, int line) {
    List<Object> out = new ArrayList<>();
    for (Object item : Values.iterate(v, line)) {
      boolean pass =
          args.isEmpty()
              ? Values.truthy(item)
              : Tests.apply(Values.str(args.get(0)), item, args.subList(1, args.size()), line);
      if (pass == keep) {
        out.add(item);
      }
    }
    return out;
  }

  private static List<Object> map(
      Object v, List<Object> args, Map<String, Object> kwargs, int line) {
    List<Object> out = new ArrayList<>();
    Object attribute = kwargs.get("attribute");
    for (Object item : Values.iterate(v, line)) {
      if (attribute != null) {
        Object x = Access.item(item, attribute, line);
        out.add(
            x instanceof Undefined && kwargs.containsKey("default") ? kwargs.get("default") : x);
      } else if (!args.isEmpty()) {
        out.add(
            apply(
                Values.str(args.get(0)),
                item,
                args.subList(1, args.size()),
                new LinkedHashMap<>(),
                line));
      } else {
        throw new TemplateException("map needs a filter name or attribute=", line);
      }
    }
    return out;
  }

  private static String indent(String s, List<Object> args, Map<String, Object> kwargs) {
    Object width = args.isEmpty() ? kwargs.getOrDefault("width", 4L) : args.get(0);
    boolean first =
        args.size() > 1 ? Values.truthy(args.get(1)) : Values.truthy(kwargs.get("first"));
    boolean blank =
        args.size() > 2 ? Values.truthy(args.get(2)) : Values.truthy(kwargs.get("blank"));
    String pad = width instanceof String w ? w : " ".repeat((int) Values.asLong(width, 0));
    String[] lines = s.split("\n", -1);
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < lines.length; i++) {
      if (i > 0) {
        sb.append('\n');
      }
      boolean indentThis = (i > 0 || first) && (blank || !lines[i].isBlank());
      sb.append(indentThis ? pad : "").append(lines[i]);
    }
    return sb.toString();
  }
}
