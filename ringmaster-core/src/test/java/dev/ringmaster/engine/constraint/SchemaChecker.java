package dev.ringmaster.engine.constraint;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Iterator;
import java.util.regex.Pattern;

/**
 * Validates a JSON value against a schema of the subset {@link RandomSchemas} generates, written
 * apart from the compiler so the two can disagree: type, properties, required,
 * additionalProperties, items, minItems, maxItems, minLength, maxLength (in code points), pattern
 * (a whole-string {@link java.util.regex} match), enum, const and anyOf.
 */
final class SchemaChecker {
  private SchemaChecker() {}

  /** The first violation found, as a path and reason, or null when the value is valid. */
  static String violation(JsonNode value, JsonNode schema, String path) {
    if (schema.has("const")) {
      return value.equals(schema.get("const")) ? null : path + ": not the const " + schema;
    }
    if (schema.has("enum")) {
      for (JsonNode e : schema.get("enum")) {
        if (value.equals(e)) {
          return null;
        }
      }
      return path + ": not in the enum " + schema.get("enum");
    }
    if (schema.has("anyOf")) {
      for (JsonNode option : schema.get("anyOf")) {
        if (violation(value, option, path) == null) {
          return null;
        }
      }
      return path + ": matches no anyOf option";
    }
    String type = schema.path("type").asText();
    return switch (type) {
      case "integer" -> value.isIntegralNumber() ? null : path + ": not an integer";
      case "number" -> value.isNumber() ? null : path + ": not a number";
      case "boolean" -> value.isBoolean() ? null : path + ": not a boolean";
      case "null" -> value.isNull() ? null : path + ": not null";
      case "string" -> string(value, schema, path);
      case "array" -> array(value, schema, path);
      case "object" -> object(value, schema, path);
      default -> throw new IllegalArgumentException("unexpected schema " + schema);
    };
  }

  private static String string(JsonNode value, JsonNode schema, String path) {
    if (!value.isTextual()) {
      return path + ": not a string";
    }
    String s = value.textValue();
    int length = s.codePointCount(0, s.length());
    if (length > schema.path("maxLength").asInt(Integer.MAX_VALUE)) {
      return path + ": longer than maxLength";
    }
    if (length < schema.path("minLength").asInt(0)) {
      return path + ": shorter than minLength";
    }
    if (schema.has("pattern")
        && !Pattern.compile(schema.get("pattern").asText()).matcher(s).matches()) {
      return path + ": does not match the pattern";
    }
    return null;
  }

  private static String array(JsonNode value, JsonNode schema, String path) {
    if (!value.isArray()) {
      return path + ": not an array";
    }
    if (value.size() < schema.path("minItems").asInt(0)
        || value.size() > schema.path("maxItems").asInt(Integer.MAX_VALUE)) {
      return path + ": item count outside minItems..maxItems";
    }
    for (int i = 0; i < value.size(); i++) {
      String v = violation(value.get(i), schema.get("items"), path + "[" + i + "]");
      if (v != null) {
        return v;
      }
    }
    return null;
  }

  private static String object(JsonNode value, JsonNode schema, String path) {
    if (!value.isObject()) {
      return path + ": not an object";
    }
    JsonNode props = schema.get("properties");
    for (JsonNode r : schema.path("required")) {
      if (!value.has(r.asText())) {
        return path + ": lacks the required " + r.asText();
      }
    }
    for (Iterator<String> it = value.fieldNames(); it.hasNext(); ) {
      String k = it.next();
      if (!props.has(k)) {
        if (!schema.path("additionalProperties").asBoolean(true)) {
          return path + ": has the extra property " + k;
        }
        continue;
      }
      String v = violation(value.get(k), props.get(k), path + "." + k);
      if (v != null) {
        return v;
      }
    }
    return null;
  }
}
