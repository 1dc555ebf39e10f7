package dev.ringmaster.model.tokenizer;

import com.fasterxml.jackson.databind.JsonNode;

/** What a split does with the text a pattern matched ({@code behavior} in tokenizer.json). */
enum SplitBehavior {
  /** Matches and the text between them become separate pieces. */
  ISOLATED,
  /** Matches are dropped. */
  REMOVED,
  /** Each match is appended to the piece before it. */
  MERGED_WITH_PREVIOUS,
  /** Each match is prepended to the piece after it. */
  MERGED_WITH_NEXT,
  /** Adjacent matches are joined into one piece. */
  CONTIGUOUS;

  static SplitBehavior fromJson(JsonNode node) {
    return switch (node.asText()) {
      case "Isolated" -> ISOLATED;
      case "Removed" -> REMOVED;
      case "MergedWithPrevious" -> MERGED_WITH_PREVIOUS;
      case "MergedWithNext" -> MERGED_WITH_NEXT;
      case "Contiguous" -> CONTIGUOUS;
      default -> throw new IllegalArgumentException("unsupported split behavior " + node);
    };
  }
}
