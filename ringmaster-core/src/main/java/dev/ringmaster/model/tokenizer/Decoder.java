package dev.ringmaster.model.tokenizer;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Turns token strings back into text (the {@code decoder} section). Like Hugging Face, each step
 * maps a list of strings to a list of strings, and the final list is concatenated.
 */
@FunctionalInterface
interface Decoder {
  List<String> decode(List<String> tokens);

  /** Without a decoder, Hugging Face joins tokens with spaces. */
  Decoder NONE = tokens -> List.of(String.join(" ", tokens));

  /** Builds the decoder described by a JSON node (null or JSON null for none). */
  static Decoder fromJson(JsonNode node) {
    if (Json.isAbsent(node)) {
      return NONE;
    }
    String type = Json.type(node, "decoder");
    return switch (type) {
      case "ByteLevel" -> tokens -> List.of(ByteLevel.decode(tokens));
      case "ByteFallback" -> Decoder::byteFallback;
      case "Fuse" -> tokens -> List.of(String.join("", tokens));
      case "Sequence" -> {
        List<Decoder> steps = new ArrayList<>();
        for (JsonNode child : Json.required(node, "decoders", "Sequence decoder")) {
          steps.add(fromJson(child));
        }
        yield tokens -> {
          List<String> out = tokens;
          for (Decoder d : steps) {
            out = d.decode(out);
          }
          return out;
        };
      }
      case "Replace" -> {
        Pattern pattern = Json.pattern(Json.required(node, "pattern", "Replace"), "Replace");
        String content =
            Matcher.quoteReplacement(Json.required(node, "content", "Replace").asText());
        yield tokens -> tokens.stream().map(t -> pattern.matcher(t).replaceAll(content)).toList();
      }
      case "Strip" -> {
        String content = Json.required(node, "content", "Strip decoder").asText();
        int start = node.path("start").asInt(0);
        int stop = node.path("stop").asInt(0);
        yield tokens -> tokens.stream().map(t -> strip(t, content, start, stop)).toList();
      }
      default ->
          throw new IllegalArgumentException(
              "unsupported decoder type '"
                  + type
                  + "' (supported: ByteLevel, ByteFallback, Fuse, Sequence, Replace, Strip)");
    };
  }

  /** Runs of {@code <0xXX>} tokens become the text of their bytes (U+FFFD per invalid byte). */
  private static List<String> byteFallback(List<String> tokens) {
    List<String> out = new ArrayList<>(tokens.size());
    ByteArrayOutputStream pending = new ByteArrayOutputStream();
    for (String t : tokens) {
      int b = byteToken(t);
      if (b >= 0) {
        pending.write(b);
        continue;
      }
      flushBytes(pending, out);
      out.add(t);
    }
    flushBytes(pending, out);
    return out;
  }

  private static void flushBytes(ByteArrayOutputStream pending, List<String> out) {
    if (pending.size() == 0) {
      return;
    }
    byte[] bytes = pending.toByteArray();
    pending.reset();
    String text = Utf8.decodeLossy(bytes);
    if (text.indexOf(Utf8.REPLACEMENT) >= 0) {
      // Hugging Face gives one replacement character per byte when the run is not valid UTF-8.
      for (int i = 0; i < bytes.length; i++) {
        out.add(String.valueOf(Utf8.REPLACEMENT));
      }
    } else {
      out.add(text);
    }
  }

  private static int byteToken(String t) {
    if (t.length() != 6 || !t.startsWith("<0x") || t.charAt(5) != '>') {
      return -1;
    }
    try {
      return Integer.parseInt(t.substring(3, 5), 16);
    } catch (NumberFormatException e) {
      return -1;
    }
  }

  private static String strip(String token, String content, int start, int stop) {
    int begin = 0;
    int end = token.length();
    for (int i = 0; i < start && token.startsWith(content, begin); i++) {
      begin += content.length();
    }
    for (int i = 0;
        i < stop
            && end - content.length() >= begin
            && token.startsWith(content, end - content.length());
        i++) {
      end -= content.length();
    }
    return token.substring(begin, end);
  }
}
