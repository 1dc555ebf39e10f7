package dev.ringmaster.model.tokenizer;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

/**
 * Splits text into pre-tokens, the units BPE works on (the {@code pre_tokenizer} section of
 * tokenizer.json). Each step refines every piece produced by the step before it.
 */
@FunctionalInterface
interface PreTokenizer {
  /** Splits one piece; never returns empty strings. */
  List<String> split(String piece);

  /** Applies this step to every piece of a list. */
  default List<String> splitAll(List<String> pieces) {
    List<String> out = new ArrayList<>(pieces.size() * 2);
    for (String piece : pieces) {
      out.addAll(split(piece));
    }
    return out;
  }

  /** Keeps the text as one piece, used when tokenizer.json has no pre-tokenizer. */
  PreTokenizer NONE = List::of;

  /** Builds the pre-tokenizer described by a JSON node (null or JSON null for none). */
  static PreTokenizer fromJson(JsonNode node) {
    if (Json.isAbsent(node)) {
      return NONE;
    }
    String type = Json.type(node, "pre_tokenizer");
    return switch (type) {
      case "Sequence" -> {
        List<PreTokenizer> steps = new ArrayList<>();
        for (JsonNode child : Json.required(node, "pretokenizers", "Sequence pre_tokenizer")) {
          steps.add(fromJson(child));
        }
        yield piece -> {
          List<String> pieces = List.of(piece);
          for (PreTokenizer step : steps) {
            pieces = step.splitAll(pieces);
          }
          return pieces;
        };
      }
      case "Split" ->
          new RegexSplitter(
              Json.pattern(Json.required(node, "pattern", "Split pre_tokenizer"), "Split"),
              SplitBehavior.fromJson(Json.required(node, "behavior", "Split pre_tokenizer")),
              Json.bool(node, "invert", false));
      case "ByteLevel" -> byteLevel(node);
      case "Digits" -> {
        Pattern digit =
            Pattern.compile(Json.bool(node, "individual_digits", false) ? "\\p{N}" : "\\p{N}+");
        yield new RegexSplitter(digit, SplitBehavior.ISOLATED, false);
      }
      case "Punctuation" ->
          new RegexSplitter(
              Pattern.compile("[\\p{P}\\x21-\\x2F\\x3A-\\x40\\x5B-\\x60\\x7B-\\x7E]"),
              node.has("behavior")
                  ? SplitBehavior.fromJson(node.get("behavior"))
                  : SplitBehavior.ISOLATED,
              false);
      case "WhitespaceSplit" ->
          new RegexSplitter(OnigurumaRegex.compile("\\s+"), SplitBehavior.REMOVED, false);
      default ->
          throw new IllegalArgumentException(
              "unsupported pre_tokenizer type '"
                  + type
                  + "' (supported: Sequence, Split, ByteLevel, Digits, Punctuation,"
                  + " WhitespaceSplit)");
    };
  }

  private static PreTokenizer byteLevel(JsonNode node) {
    boolean addPrefixSpace = Json.bool(node, "add_prefix_space", true);
    boolean useRegex = Json.bool(node, "use_regex", true);
    RegexSplitter gpt2 = new RegexSplitter(ByteLevel.GPT2_PATTERN, SplitBehavior.ISOLATED, false);
    return piece -> {
      String text = addPrefixSpace && !piece.startsWith(" ") ? " " + piece : piece;
      List<String> parts = useRegex ? gpt2.split(text) : List.of(text);
      List<String> mapped = new ArrayList<>(parts.size());
      for (String part : parts) {
        mapped.add(ByteLevel.encode(part));
      }
      return mapped;
    };
  }
}
