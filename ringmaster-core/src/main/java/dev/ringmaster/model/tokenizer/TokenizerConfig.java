package dev.ringmaster.model.tokenizer;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;

/**
 * What {@code tokenizer_config.json} and {@code generation_config.json} add to tokenizer.json:
 * BOS/EOS names and flags, the chat template, and the ids that end generation.
 *
 * @param addBosToken the {@code add_bos_token} flag, or null when the file does not set it
 * @param addEosToken the {@code add_eos_token} flag, or null when the file does not set it
 * @param bosToken the BOS token's text, or null
 * @param eosToken the EOS token's text, or null
 * @param chatTemplate the Jinja chat template, or null
 * @param generationBosId {@code bos_token_id} of generation_config.json, or null
 * @param generationEosIds {@code eos_token_id} of generation_config.json (one or several)
 */
record TokenizerConfig(
    Boolean addBosToken,
    Boolean addEosToken,
    String bosToken,
    String eosToken,
    String chatTemplate,
    Integer generationBosId,
    List<Integer> generationEosIds) {

  static final TokenizerConfig EMPTY =
      new TokenizerConfig(null, null, null, null, null, null, List.of());

  /** Reads the two optional files (either node may be null). */
  static TokenizerConfig fromJson(JsonNode tokenizerConfig, JsonNode generationConfig) {
    Boolean addBos = null;
    Boolean addEos = null;
    String bos = null;
    String eos = null;
    String template = null;
    if (tokenizerConfig != null) {
      addBos = flag(tokenizerConfig.get("add_bos_token"));
      addEos = flag(tokenizerConfig.get("add_eos_token"));
      bos = tokenText(tokenizerConfig.get("bos_token"));
      eos = tokenText(tokenizerConfig.get("eos_token"));
      template = chatTemplate(tokenizerConfig.get("chat_template"));
    }
    Integer genBos = null;
    List<Integer> genEos = new ArrayList<>();
    if (generationConfig != null) {
      JsonNode b = generationConfig.get("bos_token_id");
      if (b != null && b.canConvertToInt()) {
        genBos = b.asInt();
      }
      JsonNode e = generationConfig.get("eos_token_id");
      if (e != null && e.isArray()) {
        e.forEach(id -> genEos.add(id.asInt()));
      } else if (e != null && e.canConvertToInt()) {
        genEos.add(e.asInt());
      }
    }
    return new TokenizerConfig(addBos, addEos, bos, eos, template, genBos, List.copyOf(genEos));
  }

  private static Boolean flag(JsonNode n) {
    return n != null && n.isBoolean() ? n.asBoolean() : null;
  }

  /** A token is written either as a string or as an AddedToken object with "content". */
  private static String tokenText(JsonNode n) {
    if (Json.isAbsent(n)) {
      return null;
    }
    if (n.isTextual()) {
      return n.asText();
    }
    return Json.text(n, "content");
  }

  /** Either a string or a list of {"name", "template"}; the one named "default" is used. */
  private static String chatTemplate(JsonNode n) {
    if (Json.isAbsent(n)) {
      return null;
    }
    if (n.isTextual()) {
      return n.asText();
    }
    for (JsonNode named : n) {
      if ("default".equals(Json.text(named, "name"))) {
        return Json.text(named, "template");
      }
    }
    return null;
  }
}
