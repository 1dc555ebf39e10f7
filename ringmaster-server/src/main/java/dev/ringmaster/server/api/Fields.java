package dev.ringmaster.server.api;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * Typed access to request fields. Each getter rejects a wrong JSON type or an out-of-range value
 * with a 400 that names the parameter; absent and {@code null} fields give the default.
 */
public final class Fields {
  private Fields() {}

  private static JsonNode get(ObjectNode o, String name) {
    JsonNode n = o.get(name);
    return n == null || n.isNull() ? null : n;
  }

  /** Whether the field is present and not null. */
  public static boolean has(ObjectNode o, String name) {
    return get(o, name) != null;
  }

  /** A string field. */
  public static String string(ObjectNode o, String name, String dflt) {
    JsonNode n = get(o, name);
    if (n == null) {
      return dflt;
    }
    if (!n.isTextual()) {
      throw ApiException.invalid(name, "'" + name + "' must be a string");
    }
    return checkText(name, n.textValue());
  }

  /** A boolean field. */
  public static boolean bool(ObjectNode o, String name, boolean dflt) {
    JsonNode n = get(o, name);
    if (n == null) {
      return dflt;
    }
    if (!n.isBoolean()) {
      throw ApiException.invalid(name, "'" + name + "' must be true or false");
    }
    return n.booleanValue();
  }

  /** An integer field in {@code [min, max]}. */
  public static long integer(ObjectNode o, String name, long dflt, long min, long max) {
    JsonNode n = get(o, name);
    if (n == null) {
      return dflt;
    }
    long v = integerValue(name, n);
    if (v < min || v > max) {
      throw ApiException.invalid(
          name, "'" + name + "' must be between " + min + " and " + max + ", got " + v);
    }
    return v;
  }

  /** An integer JSON value (a number without fraction). */
  public static long integerValue(String name, JsonNode n) {
    if (n.isIntegralNumber() && n.canConvertToLong()) {
      return n.longValue();
    }
    if (n.isNumber() && n.doubleValue() == Math.rint(n.doubleValue()) && n.canConvertToLong()) {
      return n.longValue();
    }
    throw ApiException.invalid(name, "'" + name + "' must be an integer");
  }

  /** A finite number field in {@code [min, max]}. */
  public static double number(ObjectNode o, String name, double dflt, double min, double max) {
    JsonNode n = get(o, name);
    if (n == null) {
      return dflt;
    }
    if (!n.isNumber() || !Double.isFinite(n.doubleValue())) {
      throw ApiException.invalid(name, "'" + name + "' must be a number");
    }
    double v = n.doubleValue();
    if (v < min || v > max) {
      throw ApiException.invalid(
          name, "'" + name + "' must be between " + min + " and " + max + ", got " + v);
    }
    return v;
  }

  /** An object field, or null when absent. */
  public static ObjectNode object(ObjectNode o, String name) {
    JsonNode n = get(o, name);
    if (n == null) {
      return null;
    }
    if (!n.isObject()) {
      throw ApiException.invalid(name, "'" + name + "' must be an object");
    }
    return (ObjectNode) n;
  }

  /** An array of token ids (each within {@code [0, vocab)}). */
  public static int[] tokenIds(String name, JsonNode n, int vocab) {
    if (!n.isArray()) {
      throw ApiException.invalid(name, "'" + name + "' must be an array of token ids");
    }
    int[] ids = new int[n.size()];
    for (int i = 0; i < ids.length; i++) {
      JsonNode e = n.get(i);
      if (!e.isIntegralNumber()) {
        throw ApiException.invalid(name, "'" + name + "' must contain only integer token ids");
      }
      long v = e.asLong();
      if (!e.canConvertToInt() || v < 0 || v >= vocab) {
        throw ApiException.invalid(
            name,
            "'"
                + name
                + "' contains token id "
                + e.asText()
                + ", outside the vocabulary (0.."
                + (vocab - 1)
                + ")");
      }
      ids[i] = (int) v;
    }
    return ids;
  }

  /**
   * Stop conditions: a string, or an array of strings and (as an extension) token ids.
   *
   * @param strings receives the stop strings
   * @param ids receives the stop token ids
   */
  public static void stops(
      ObjectNode o, String name, int maxStops, int vocab, List<String> strings, List<Integer> ids) {
    JsonNode n = get(o, name);
    if (n == null) {
      return;
    }
    List<JsonNode> items = new ArrayList<>();
    if (n.isArray()) {
      n.forEach(items::add);
    } else {
      items.add(n);
    }
    if (items.size() > maxStops) {
      throw ApiException.invalid(name, "'" + name + "' allows at most " + maxStops + " entries");
    }
    for (JsonNode e : items) {
      if (e.isTextual()) {
        if (e.textValue().isEmpty()) {
          throw ApiException.invalid(name, "'" + name + "' entries must not be empty strings");
        }
        strings.add(checkText(name, e.textValue()));
      } else if (e.isIntegralNumber()) {
        ids.add(tokenIds(name, o.arrayNode().add(e), vocab)[0]);
      } else {
        throw ApiException.invalid(
            name, "'" + name + "' must be a string or an array of strings or token ids");
      }
    }
  }

  /**
   * Rejects a string holding an unpaired UTF-16 surrogate (JSON can spell one as {@code \ud800}):
   * such text has no UTF-8 form.
   */
  public static String checkText(String name, String s) {
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (Character.isHighSurrogate(c)) {
        if (i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
          i++;
          continue;
        }
        throw ApiException.invalid(name, "'" + name + "' contains an unpaired surrogate");
      }
      if (Character.isLowSurrogate(c)) {
        throw ApiException.invalid(name, "'" + name + "' contains an unpaired surrogate");
      }
    }
    return s;
  }

  /**
   * Rejects fields not in {@code known} (for objects where a typo would silently change things).
   */
  public static void onlyKnown(ObjectNode o, String where, Set<String> known) {
    o.fieldNames()
        .forEachRemaining(
            f -> {
              if (!known.contains(f)) {
                throw ApiException.invalid(
                    where + "." + f, "unknown field '" + f + "' in '" + where + "'");
              }
            });
  }
}
