package dev.ringmaster.model.tokenizer;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Rewrites text before pre-tokenization (the {@code normalizer} section of tokenizer.json). */
@FunctionalInterface
interface Normalizer {
  String normalize(String text);

  /** The identity, used when tokenizer.json has {@code "normalizer": null}. */
  Normalizer NONE = text -> text;

  /** Builds the normalizer described by a JSON node (null or JSON null for none). */
  static Normalizer fromJson(JsonNode node) {
    if (Json.isAbsent(node)) {
      return NONE;
    }
    String type = Json.type(node, "normalizer");
    return switch (type) {
      case "Sequence" -> {
        List<Normalizer> parts = new ArrayList<>();
        for (JsonNode child : Json.required(node, "normalizers", "Sequence normalizer")) {
          parts.add(fromJson(child));
        }
        yield text -> {
          String s = text;
          for (Normalizer n : parts) {
            s = n.normalize(s);
          }
          return s;
        };
      }
      case "NFC" -> text -> java.text.Normalizer.normalize(text, java.text.Normalizer.Form.NFC);
      case "NFD" -> text -> java.text.Normalizer.normalize(text, java.text.Normalizer.Form.NFD);
      case "NFKC" -> text -> java.text.Normalizer.normalize(text, java.text.Normalizer.Form.NFKC);
      case "NFKD" -> text -> java.text.Normalizer.normalize(text, java.text.Normalizer.Form.NFKD);
      case "Lowercase" -> text -> text.toLowerCase(Locale.ROOT);
      case "Prepend" -> {
        String prefix = Json.required(node, "prepend", "Prepend normalizer").asText();
        yield text -> text.isEmpty() ? text : prefix + text;
      }
      case "Replace" -> {
        Pattern pattern = Json.pattern(Json.required(node, "pattern", "Replace"), "Replace");
        String content =
            Matcher.quoteReplacement(Json.required(node, "content", "Replace").asText());
        yield text -> pattern.matcher(text).replaceAll(content);
      }
      case "Strip" -> {
        boolean left = Json.bool(node, "strip_left", false);
        boolean right = Json.bool(node, "strip_right", false);
        yield text -> strip(text, left, right);
      }
      default ->
          throw new IllegalArgumentException(
              "unsupported normalizer type '"
                  + type
                  + "' (supported: Sequence, NFC, NFD, NFKC, NFKD, Lowercase, Prepend, Replace,"
                  + " Strip)");
    };
  }

  private static String strip(String text, boolean left, boolean right) {
    int start = 0;
    int end = text.length();
    while (left && start < end && UnicodeSpace.is(text.codePointAt(start))) {
      start += Character.charCount(text.codePointAt(start));
    }
    while (right && end > start && UnicodeSpace.is(text.codePointBefore(end))) {
      end -= Character.charCount(text.codePointBefore(end));
    }
    return text.substring(start, end);
  }
}
