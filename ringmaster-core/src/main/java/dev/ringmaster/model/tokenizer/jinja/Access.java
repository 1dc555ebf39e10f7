package dev.ringmaster.model.tokenizer.jinja;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** Attribute, item and slice access, membership, and the methods of str and dict. */
final class Access {
  private Access() {}

  /** {@code obj.name}: a method or attribute first, then an item, as Jinja's getattr does. */
  static Object attribute(Object obj, String name, int line) {
    return switch (obj) {
      case Namespace ns ->
          ns.attributes.containsKey(name) ? ns.attributes.get(name) : new Undefined(name);
      case LoopInfo loop -> loop.attribute(name);
      case String s -> Methods.ofString(s, name, line);
      case Map<?, ?> m -> {
        Object method = Methods.ofDict(m, name);
        if (method != null) {
          yield method;
        }
        yield m.containsKey(name) ? m.get(name) : new Undefined(name);
      }
      default -> new Undefined(name);
    };
  }

  /** {@code obj[key]}: an item first, then an attribute, as Jinja's getitem does. */
  static Object item(Object obj, Object key, int line) {
    switch (obj) {
      case Map<?, ?> m -> {
        if (m.containsKey(key)) {
          return m.get(key);
        }
        return key instanceof String s ? attribute(obj, s, line) : new Undefined(Values.str(key));
      }
      case List<?> list when key instanceof Long || key instanceof Boolean -> {
        int i = index(Values.asLong(key, line), list.size());
        return i >= 0 && i < list.size() ? list.get(i) : new Undefined("[" + key + "]");
      }
      case String s when key instanceof Long -> {
        int[] cps = s.codePoints().toArray();
        int i = index((Long) key, cps.length);
        return i >= 0 && i < cps.length
            ? Character.toString(cps[i])
            : new Undefined("[" + key + "]");
      }
      default -> {
        return key instanceof String name ? attribute(obj, name, line) : new Undefined("item");
      }
    }
  }

  private static int index(long i, int size) {
    return (int) (i < 0 ? i + size : i);
  }

  /** Python slicing of lists and strings. */
  static Object slice(Object obj, Object start, Object stop, Object step, int line) {
    List<Object> items;
    boolean isString = obj instanceof String;
    if (obj instanceof List<?> l) {
      items = new ArrayList<>(l);
    } else if (isString) {
      items = Values.iterate(obj, line);
    } else {
      throw new TemplateException("cannot slice " + Values.typeName(obj), line);
    }
    int n = items.size();
    long st = step == null ? 1 : Values.asLong(step, line);
    if (st == 0) {
      throw new TemplateException("slice step cannot be zero", line);
    }
    long lo = st > 0 ? 0 : n - 1;
    long hi = st > 0 ? n : -1;
    long from = start == null ? lo : clamp(Values.asLong(start, line), n, st > 0);
    long to = stop == null ? hi : clamp(Values.asLong(stop, line), n, st > 0);
    List<Object> out = new ArrayList<>();
    for (long i = from; st > 0 ? i < to : i > to; i += st) {
      out.add(items.get((int) i));
    }
    if (isString) {
      StringBuilder sb = new StringBuilder();
      out.forEach(c -> sb.append((String) c));
      return sb.toString();
    }
    return out;
  }

  private static long clamp(long i, int n, boolean forward) {
    if (i < 0) {
      i += n;
    }
    if (forward) {
      return Math.max(0, Math.min(i, n));
    }
    return Math.max(-1, Math.min(i, n - 1));
  }

  /** Python's {@code needle in container}. */
  static boolean contains(Object container, Object needle, int line) {
    return switch (container) {
      case String s when needle instanceof String n -> s.contains(n);
      case List<?> l -> l.stream().anyMatch(x -> Values.equal(x, needle));
      case Map<?, ?> m -> m.containsKey(needle);
      case Undefined u -> false;
      default ->
          throw new TemplateException(
              "'in' needs a string, list or dict, got " + Values.typeName(container), line);
    };
  }
}
