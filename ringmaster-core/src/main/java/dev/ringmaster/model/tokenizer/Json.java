package dev.ringmaster.model.tokenizer;

import com.fasterxml.jackson.databind.JsonNode;

/** Small helpers for reading optional fields of the tokenizer JSON files. */
final class Json {
  private Json() {}

  static boolean isAbsent(JsonNode node) {
    return node == null || node.isNull() || node.isMissingNode();
  }

  static boolean bool(JsonNode parent, String field, boolean fallback) {
    JsonNode n = parent.get(field);
    return isAbsent(n) ? fallback : n.asBoolean(fallback);
  }

  static String text(JsonNode parent, String field) {
    JsonNode n = parent.get(field);
    return isAbsent(n) ? null : n.asText();
  }

  /** A required field, with an error that names it and the component it belongs to. */
  static JsonNode required(JsonNode parent, String field, String component) {
    JsonNode n = parent.get(field);
    if (isAbsent(n)) {
      throw new IllegalArgumentException(component + " has no '" + field + "' field");
    }
    return n;
  }

  static String type(JsonNode node, String component) {
    return required(node, "type", component).asText();
  }

  /** The regex of a {@code {"String": ...}} or {@code {"Regex": ...}} pattern object. */
  static java.util.regex.Pattern pattern(JsonNode patternNode, String component) {
    if (patternNode.has("String")) {
      return java.util.regex.Pattern.compile(
          java.util.regex.Pattern.quote(patternNode.get("String").asText()));
    }
    if (patternNode.has("Regex")) {
      return OnigurumaRegex.compile(patternNode.get("Regex").asText());
    }
    throw new IllegalArgumentException(
        component + " pattern must be {\"String\": ...} or {\"Regex\": ...}, got " + patternNode);
  }
}
