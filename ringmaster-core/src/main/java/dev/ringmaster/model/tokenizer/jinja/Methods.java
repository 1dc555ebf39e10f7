package dev.ringmaster.model.tokenizer.jinja;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;

/** The Python methods of str and dict that chat templates call. */
final class Methods {
  private Methods() {}

  static Object ofString(String s, String name, int line) {
    return switch (name) {
      case "startswith" -> (JinjaFunction) (a, k, l) -> affix(s, arg(a, 0, name, l), true, l);
      case "endswith" -> (JinjaFunction) (a, k, l) -> affix(s, arg(a, 0, name, l), false, l);
      case "strip" -> (JinjaFunction) (a, k, l) -> Values.strip(s, chars(a), true, true);
      case "lstrip" -> (JinjaFunction) (a, k, l) -> Values.strip(s, chars(a), true, false);
      case "rstrip" -> (JinjaFunction) (a, k, l) -> Values.strip(s, chars(a), false, true);
      case "upper" -> (JinjaFunction) (a, k, l) -> s.toUpperCase(Locale.ROOT);
      case "lower" -> (JinjaFunction) (a, k, l) -> s.toLowerCase(Locale.ROOT);
      case "title" -> (JinjaFunction) (a, k, l) -> title(s);
      case "capitalize" -> (JinjaFunction) (a, k, l) -> capitalize(s);
      case "split" -> (JinjaFunction) (a, k, l) -> split(s, a, k, l);
      case "replace" ->
          (JinjaFunction)
              (a, k, l) -> {
                String from = Values.str(arg(a, 0, name, l));
                String to = Values.str(arg(a, 1, name, l));
                long count = a.size() > 2 ? Values.asLong(a.get(2), l) : -1;
                return replace(s, from, to, count);
              };
      case "find" ->
          (JinjaFunction)
              (a, k, l) -> {
                int i = s.indexOf(Values.str(arg(a, 0, name, l)));
                return (long) (i < 0 ? -1 : s.codePointCount(0, i));
              };
      case "count" ->
          (JinjaFunction)
              (a, k, l) -> {
                String sub = Values.str(arg(a, 0, name, l));
                return sub.isEmpty()
                    ? Values.length(s, l) + 1
                    : (long) s.split(Pattern.quote(sub), -1).length - 1;
              };
      case "join" ->
          (JinjaFunction)
              (a, k, l) -> {
                List<String> parts = new ArrayList<>();
                Values.iterate(arg(a, 0, name, l), l).forEach(x -> parts.add(Values.str(x)));
                return String.join(s, parts);
              };
      default -> new Undefined("str." + name);
    };
  }

  /** A bound dict method, or null if {@code name} is not one. */
  static JinjaFunction ofDict(Map<?, ?> m, String name) {
    return switch (name) {
      case "items" ->
          (a, k, l) -> {
            List<Object> out = new ArrayList<>();
            m.forEach((key, v) -> out.add(Arrays.asList(key, v))); // allows None values
            return out;
          };
      case "keys" -> (a, k, l) -> new ArrayList<Object>(m.keySet());
      case "values" -> (a, k, l) -> new ArrayList<Object>(m.values());
      case "get" ->
          (a, k, l) -> {
            Object key = arg(a, 0, name, l);
            return m.containsKey(key) ? m.get(key) : a.size() > 1 ? a.get(1) : null;
          };
      default -> null;
    };
  }

  static Object arg(List<Object> args, int i, String method, int line) {
    if (i >= args.size()) {
      throw new TemplateException(method + "() is missing argument " + (i + 1), line);
    }
    return args.get(i);
  }

  private static String chars(List<Object> args) {
    return args.isEmpty() || args.get(0) == null ? null : Values.str(args.get(0));
  }

  private static boolean affix(String s, Object affix, boolean prefix, int line) {
    if (affix instanceof List<?> options) {
      for (Object o : options) {
        if (affix(s, o, prefix, line)) {
          return true;
        }
      }
      return false;
    }
    if (!(affix instanceof String a)) {
      throw new TemplateException("startswith/endswith needs a string", line);
    }
    return prefix ? s.startsWith(a) : s.endsWith(a);
  }

  private static List<Object> split(String s, List<Object> a, Map<String, Object> k, int line) {
    Object sep = a.isEmpty() ? k.get("sep") : a.get(0);
    Object maxObj = a.size() > 1 ? a.get(1) : k.get("maxsplit");
    long max = maxObj == null ? -1 : Values.asLong(maxObj, line);
    List<Object> out = new ArrayList<>();
    if (sep == null) {
      // Whitespace split: runs of whitespace separate, leading/trailing ignored.
      int i = 0;
      int n = s.length();
      while (i < n) {
        while (i < n && Values.isPySpace(s.charAt(i))) {
          i++;
        }
        if (i >= n) {
          break;
        }
        if (max >= 0 && out.size() == max) {
          out.add(Values.strip(s.substring(i), null, false, true));
          return out;
        }
        int j = i;
        while (j < n && !Values.isPySpace(s.charAt(j))) {
          j++;
        }
        out.add(s.substring(i, j));
        i = j;
      }
      return out;
    }
    String sepStr = Values.str(sep);
    if (sepStr.isEmpty()) {
      throw new TemplateException("split(): empty separator", line);
    }
    int from = 0;
    while (max < 0 || out.size() < max) {
      int at = s.indexOf(sepStr, from);
      if (at < 0) {
        break;
      }
      out.add(s.substring(from, at));
      from = at + sepStr.length();
    }
    out.add(s.substring(from));
    return out;
  }

  private static String replace(String s, String from, String to, long count) {
    if (count < 0) {
      return s.replace(from, to);
    }
    StringBuilder sb = new StringBuilder();
    int start = 0;
    for (long done = 0; done < count; done++) {
      int at = s.indexOf(from, start);
      if (at < 0 || from.isEmpty()) {
        break;
      }
      sb.append(s, start, at).append(to);
      start = at + from.length();
    }
    return sb.append(s.substring(start)).toString();
  }

  static String title(String s) {
    StringBuilder sb = new StringBuilder(s.length());
    boolean previousCased = false;
    for (int i = 0; i < s.length(); ) {
      int cp = s.codePointAt(i);
      i += Character.charCount(cp);
      sb.appendCodePoint(previousCased ? Character.toLowerCase(cp) : Character.toTitleCase(cp));
      previousCased = Character.isLetter(cp);
    }
    return sb.toString();
  }

  static String capitalize(String s) {
    if (s.isEmpty()) {
      return s;
    }
    int first = s.codePointAt(0);
    return new StringBuilder()
        .appendCodePoint(Character.toTitleCase(first))
        .append(s.substring(Character.charCount(first)).toLowerCase(Locale.ROOT))
        .toString();
  }
}
