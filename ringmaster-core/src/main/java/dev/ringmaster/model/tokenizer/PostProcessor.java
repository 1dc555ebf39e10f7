package dev.ringmaster.model.tokenizer;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Adds special tokens around an encoded sequence (the {@code post_processor} section). Only
 * single-sequence encoding is needed here, so only the {@code single} template is used.
 */
@FunctionalInterface
interface PostProcessor {
  int[] apply(int[] ids);

  /** Adds nothing; also what the ByteLevel post-processor does to ids (it only fixes offsets). */
  PostProcessor NONE = ids -> ids;

  /** A processor that puts fixed ids before and after the sequence. */
  static PostProcessor wrap(int[] before, int[] after) {
    return ids -> {
      int[] out = new int[before.length + ids.length + after.length];
      System.arraycopy(before, 0, out, 0, before.length);
      System.arraycopy(ids, 0, out, before.length, ids.length);
      System.arraycopy(after, 0, out, before.length + ids.length, after.length);
      return out;
    };
  }

  /** Builds the post-processor described by a JSON node (null or JSON null for none). */
  static PostProcessor fromJson(JsonNode node, Map<String, Integer> tokenIds) {
    if (Json.isAbsent(node)) {
      return NONE;
    }
    String type = Json.type(node, "post_processor");
    return switch (type) {
      case "ByteLevel" -> NONE;
      case "Sequence" -> {
        List<PostProcessor> steps = new ArrayList<>();
        for (JsonNode child : Json.required(node, "processors", "Sequence post_processor")) {
          steps.add(fromJson(child, tokenIds));
        }
        yield ids -> {
          int[] out = ids;
          for (PostProcessor p : steps) {
            out = p.apply(out);
          }
          return out;
        };
      }
      case "TemplateProcessing" -> template(node);
      case "BertProcessing", "RobertaProcessing" -> {
        int cls = Json.required(node, "cls", type).get(1).asInt();
        int sep = Json.required(node, "sep", type).get(1).asInt();
        yield wrap(new int[] {cls}, new int[] {sep});
      }
      default ->
          throw new IllegalArgumentException(
              "unsupported post_processor type '"
                  + type
                  + "' (supported: ByteLevel, Sequence, TemplateProcessing, BertProcessing,"
                  + " RobertaProcessing)");
    };
  }

  private static PostProcessor template(JsonNode node) {
    JsonNode specials = Json.required(node, "special_tokens", "TemplateProcessing");
    List<Integer> before = new ArrayList<>();
    List<Integer> after = new ArrayList<>();
    boolean seenSequence = false;
    for (JsonNode piece : Json.required(node, "single", "TemplateProcessing")) {
      if (piece.has("Sequence")) {
        if (seenSequence) {
          throw new IllegalArgumentException("TemplateProcessing 'single' has two sequences");
        }
        seenSequence = true;
      } else if (piece.has("SpecialToken")) {
        String name = piece.get("SpecialToken").get("id").asText();
        JsonNode special = specials.get(name);
        if (special == null) {
          throw new IllegalArgumentException(
              "TemplateProcessing uses special token '" + name + "' missing from special_tokens");
        }
        for (JsonNode id : Json.required(special, "ids", "special token " + name)) {
          (seenSequence ? after : before).add(id.asInt());
        }
      } else {
        throw new IllegalArgumentException("TemplateProcessing piece not understood: " + piece);
      }
    }
    return wrap(
        before.stream().mapToInt(Integer::intValue).toArray(),
        after.stream().mapToInt(Integer::intValue).toArray());
  }
}
