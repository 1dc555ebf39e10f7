package dev.ringmaster.model.tokenizer.jinja;

import java.util.List;
import java.util.Map;

/**
 * Python's {@code json.dumps(value, ensure_ascii=False, indent=indent)}, which transformers' {@code
 * tojson} filter calls: {@code ", "} and {@code ": "} separators without indent, non-ASCII kept.
 */
final class PyJson {
  private PyJson() {}

  static String dumps(Object value, Integer indent, int line) {
    StringBuilder sb = new StringBuilder();
    write(value, indent, 0, sb, line);
    return sb.toString();
  }

  private static void write(Object v, Integer indent, int depth, StringBuilder sb, int line) {
    switch (v) {
      case null -> sb.append("null");
      case Boolean b -> sb.append(b ? "true" : "false");
      case Long l -> sb.append(l);
      case Double d -> sb.append(Double.isFinite(d) ? Values.floatRepr(d) : nonFinite(d));
      case String s -> quote(s, sb);
      case List<?> list -> {
        if (list.isEmpty()) {
          sb.append("[]");
          return;
        }
        sb.append('[');
        for (int i = 0; i < list.size(); i++) {
          separator(i, indent, depth + 1, sb);
          write(list.get(i), indent, depth + 1, sb, line);
        }
        close(indent, depth, sb).append(']');
      }
      case Map<?, ?> map -> {
        if (map.isEmpty()) {
          sb.append("{}");
          return;
        }
        sb.append('{');
        int i = 0;
        for (Map.Entry<?, ?> e : map.entrySet()) {
          separator(i++, indent, depth + 1, sb);
          quote(e.getKey() instanceof String k ? k : Values.str(e.getKey()), sb);
          sb.append(": ");
          write(e.getValue(), indent, depth + 1, sb, line);
        }
        close(indent, depth, sb).append('}');
      }
      case Namespace ns -> write(ns.attributes, indent, depth, sb, line);
      default ->
          throw new TemplateException(
              "tojson: " + Values.typeName(v) + " is not JSON serializable", line);
    }
  }

  private static String nonFinite(double d) {
    return Double.isNaN(d) ? "NaN" : d > 0 ? "Infinity" : "-Infinity";
  }

  private static void separator(int i, Integer indent, int depth, StringBuilder sb) {
    if (indent == null) {
      sb.append(i > 0 ? ", " : "");
    } else {
      sb.append(i > 0 ? ",\n" : "\n").append(" ".repeat(indent * depth));
    }
  }

  private static StringBuilder close(Integer indent, int depth, StringBuilder sb) {
    if (indent != null) {
      sb.append('\n').append(" ".repeat(indent * depth));
    }
    return sb;
  }

  private static void quote(String s, StringBuilder sb) {
    sb.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> sb.append("\\\"");
        case '\\' -> sb.append("\\\\");
        case '\n' -> sb.append("\\n");
        case '\r' -> sb.append("\\r");
        case '\t' -> sb.append("\\t");
        case '\b' -> sb.append("\\b");
        case '\f' -> sb.append("\\f");
        default -> {
          if (c < 0x20) {
            sb.append(String.format("\\u%04x", (int) c));
          } else {
            sb.append(c);
          }
        }
      }
    }
    sb.append('"');
  }
}
