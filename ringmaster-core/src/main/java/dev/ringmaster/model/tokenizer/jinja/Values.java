package dev.ringmaster.model.tokenizer.jinja;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Python semantics for template values. Values are: null (None), {@link Undefined}, Boolean, Long,
 * Double, String, List, Map, {@link Namespace}, {@link LoopInfo} and {@link JinjaFunction}.
 */
final class Values {
  private Values() {}

  /**
   * Converts caller-supplied Java values (Integer, arrays, records of maps...) to template values.
   */
  static Object fromJava(Object v) {
    return switch (v) {
      case null -> null;
      case Integer i -> i.longValue();
      case Short s -> s.longValue();
      case Byte b -> b.longValue();
      case Float f -> f.doubleValue();
      case Map<?, ?> m -> {
        Map<Object, Object> out = new LinkedHashMap<>();
        m.forEach((k, val) -> out.put(fromJava(k), fromJava(val)));
        yield out;
      }
      case Collection<?> c -> {
        List<Object> out = new ArrayList<>(c.size());
        c.forEach(x -> out.add(fromJava(x)));
        yield out;
      }
      case Object[] a -> fromJava(List.of(a));
      default -> v;
    };
  }

  static boolean truthy(Object v) {
    return switch (v) {
      case null -> false;
      case Undefined u -> false;
      case Boolean b -> b;
      case Long l -> l != 0;
      case Double d -> d != 0;
      case String s -> !s.isEmpty();
      case Collection<?> c -> !c.isEmpty();
      case Map<?, ?> m -> !m.isEmpty();
      default -> true;
    };
  }

  /** Python's {@code str()}, as {@code {{ value }}} prints it. */
  static String str(Object v) {
    return switch (v) {
      case null -> "None";
      case Undefined u -> "";
      case String s -> s;
      default -> repr(v);
    };
  }

  /** Python's {@code repr()}. */
  static String repr(Object v) {
    return switch (v) {
      case null -> "None";
      case Undefined u -> "";
      case Boolean b -> b ? "True" : "False";
      case Long l -> l.toString();
      case Double d -> floatRepr(d);
      case String s -> stringRepr(s);
      case List<?> list -> {
        StringBuilder sb = new StringBuilder("[");
        for (int i = 0; i < list.size(); i++) {
          sb.append(i > 0 ? ", " : "").append(repr(list.get(i)));
        }
        yield sb.append(']').toString();
      }
      case Map<?, ?> map -> {
        StringBuilder sb = new StringBuilder("{");
        Iterator<? extends Map.Entry<?, ?>> it = map.entrySet().iterator();
        while (it.hasNext()) {
          Map.Entry<?, ?> e = it.next();
          sb.append(repr(e.getKey())).append(": ").append(repr(e.getValue()));
          sb.append(it.hasNext() ? ", " : "");
        }
        yield sb.append('}').toString();
      }
      default -> v.toString();
    };
  }

  static String floatRepr(double d) {
    if (Double.isNaN(d)) {
      return "nan";
    }
    if (Double.isInfinite(d)) {
      return d > 0 ? "inf" : "-inf";
    }
    if (d == Math.rint(d) && Math.abs(d) < 1e16) {
      return new BigDecimal(d).toPlainString() + ".0";
    }
    String s = Double.toString(d);
    if (!s.contains("E")) {
      return s;
    }
    // Java: 1.0E-5, Python: 1e-05.
    String mantissa = s.substring(0, s.indexOf('E')).replaceAll("\\.0$", "");
    int exp = Integer.parseInt(s.substring(s.indexOf('E') + 1));
    return mantissa + "e" + (exp < 0 ? "-" : "+") + (Math.abs(exp) < 10 ? "0" : "") + Math.abs(exp);
  }

  private static String stringRepr(String s) {
    char quote = s.indexOf('\'') >= 0 && s.indexOf('"') < 0 ? '"' : '\'';
    StringBuilder sb = new StringBuilder().append(quote);
    s.codePoints()
        .forEach(
            cp -> {
              switch (cp) {
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                default -> {
                  if (cp == quote) {
                    sb.append('\\').appendCodePoint(cp);
                  } else if (cp < 0x20 || cp == 0x7F) {
                    sb.append(String.format("\\x%02x", cp));
                  } else {
                    sb.appendCodePoint(cp);
                  }
                }
              }
            });
    return sb.append(quote).toString();
  }

  /** Python's {@code ==} (numbers compare by value, booleans count as 0 and 1). */
  static boolean equal(Object a, Object b) {
    if (a instanceof Undefined || b instanceof Undefined) {
      return a instanceof Undefined && b instanceof Undefined;
    }
    if (a == null || b == null) {
      return a == b;
    }
    if (isNumber(a) && isNumber(b)) {
      return asDouble(a) == asDouble(b);
    }
    if (a instanceof List<?> la && b instanceof List<?> lb) {
      if (la.size() != lb.size()) {
        return false;
      }
      for (int i = 0; i < la.size(); i++) {
        if (!equal(la.get(i), lb.get(i))) {
          return false;
        }
      }
      return true;
    }
    return a.equals(b);
  }

  /** Python's ordering for numbers and strings (strings by code point). */
  static int compare(Object a, Object b, int line) {
    if (isNumber(a) && isNumber(b)) {
      return Double.compare(asDouble(a), asDouble(b));
    }
    if (a instanceof String sa && b instanceof String sb) {
      int i = 0;
      int j = 0;
      while (i < sa.length() && j < sb.length()) {
        int ca = sa.codePointAt(i);
        int cb = sb.codePointAt(j);
        if (ca != cb) {
          return Integer.compare(ca, cb);
        }
        i += Character.charCount(ca);
        j += Character.charCount(cb);
      }
      return Boolean.compare(i < sa.length(), j < sb.length());
    }
    throw new TemplateException("cannot compare " + typeName(a) + " with " + typeName(b), line);
  }

  static boolean isNumber(Object v) {
    return v instanceof Long || v instanceof Double || v instanceof Boolean;
  }

  static double asDouble(Object v) {
    return switch (v) {
      case Long l -> l;
      case Double d -> d;
      case Boolean b -> b ? 1 : 0;
      default -> throw new IllegalArgumentException("not a number: " + v);
    };
  }

  static long asLong(Object v, int line) {
    return switch (v) {
      case Long l -> l;
      case Boolean b -> b ? 1 : 0;
      case Double d -> (long) d.doubleValue();
      default -> throw new TemplateException("expected an integer, got " + typeName(v), line);
    };
  }

  /** The items a for loop (or a filter) iterates over. */
  static List<Object> iterate(Object v, int line) {
    return switch (v) {
      case Undefined u -> List.of();
      case List<?> l -> new ArrayList<>(l);
      case Map<?, ?> m -> new ArrayList<>(m.keySet());
      case String s -> {
        List<Object> chars = new ArrayList<>();
        s.codePoints().forEach(cp -> chars.add(Character.toString(cp)));
        yield chars;
      }
      default -> throw new TemplateException(typeName(v) + " is not iterable", line);
    };
  }

  /** Python's {@code len()}: code points for strings. */
  static long length(Object v, int line) {
    return switch (v) {
      case String s -> s.codePointCount(0, s.length());
      case Collection<?> c -> c.size();
      case Map<?, ?> m -> m.size();
      case Undefined u -> 0;
      default -> throw new TemplateException(typeName(v) + " has no length", line);
    };
  }

  static String typeName(Object v) {
    return switch (v) {
      case null -> "None";
      case Undefined u -> "undefined '" + u.name() + "'";
      case Boolean b -> "bool";
      case Long l -> "int";
      case Double d -> "float";
      case String s -> "str";
      case List<?> l -> "list";
      case Map<?, ?> m -> "dict";
      case Namespace n -> "namespace";
      case JinjaFunction f -> "function";
      default -> v.getClass().getSimpleName();
    };
  }

  /** Python whitespace, as {@code str.strip()} uses it. */
  static boolean isPySpace(int cp) {
    return Character.isWhitespace(cp) || Character.isSpaceChar(cp) || cp == 0x85;
  }

  static String strip(String s, String chars, boolean left, boolean right) {
    int start = 0;
    int end = s.length();
    while (left && start < end && stripped(s.codePointAt(start), chars)) {
      start += Character.charCount(s.codePointAt(start));
    }
    while (right && end > start && stripped(s.codePointBefore(end), chars)) {
      end -= Character.charCount(s.codePointBefore(end));
    }
    return s.substring(start, end);
  }

  private static boolean stripped(int cp, String chars) {
    return chars == null ? isPySpace(cp) : chars.indexOf(Character.toString(cp)) >= 0;
  }
}
