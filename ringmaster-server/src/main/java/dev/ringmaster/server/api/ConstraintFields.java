package dev.ringmaster.server.api;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ringmaster.engine.constraint.ConstraintCompiler;
import dev.ringmaster.engine.constraint.OutputConstraint;
import dev.ringmaster.engine.constraint.UnsupportedConstraintException;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

/**
 * The structured-output fields of both APIs, compiled to a {@link OutputConstraint} on the request
 * thread: OpenAI's {@code response_format} ({@code text}, {@code json_object}, {@code
 * json_schema}), SGLang's {@code regex}, {@code json_schema} and {@code ebnf}, and vLLM's {@code
 * guided_json}, {@code guided_regex}, {@code guided_choice} and {@code guided_grammar}. At most one
 * per request; {@code structural_tag}, {@code structured_outputs}, and grammar or schema features
 * outside the compilers' subsets are refused with a 400 naming them, never ignored.
 */
public final class ConstraintFields {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final List<String> REFUSED =
      List.of("structural_tag", "structured_outputs", "guided_decoding_backend");

  private ConstraintFields() {}

  /** The constraint of an OpenAI request body, or null for none. */
  public static OutputConstraint openAi(ObjectNode o, ConstraintCompiler compiler) {
    refuseGrammars(o, "");
    List<String> given = new ArrayList<>();
    OutputConstraint c = null;
    ObjectNode format = Fields.object(o, "response_format");
    if (format != null) {
      String type = Fields.string(format, "type", "text");
      switch (type) {
        case "text" -> {}
        case "json_object" -> {
          given.add("response_format");
          c = compile("response_format", compiler::jsonObject);
        }
        case "json_schema" -> {
          given.add("response_format");
          ObjectNode js = Fields.object(format, "json_schema");
          if (js == null || !js.has("schema") || !js.get("schema").isObject()) {
            throw ApiException.invalid(
                "response_format.json_schema",
                "response_format 'json_schema' needs a 'json_schema' object with a 'schema'"
                    + " object");
          }
          JsonNode schema = js.get("schema");
          c = compile("response_format.json_schema.schema", () -> compiler.jsonSchema(schema));
        }
        default ->
            throw ApiException.unsupported(
                "response_format.type",
                "response_format type '"
                    + type
                    + "' is not supported (use 'text', 'json_object' or 'json_schema')");
      }
    }
    for (String f : List.of("regex", "guided_regex")) {
      if (Fields.has(o, f)) {
        given.add(f);
        String pattern = Fields.string(o, f, null);
        c = compile(f, () -> compiler.regex(pattern));
      }
    }
    if (Fields.has(o, "guided_json")) {
      given.add("guided_json");
      JsonNode schema = schemaNode(o.get("guided_json"), "guided_json");
      c = compile("guided_json", () -> compiler.jsonSchema(schema));
    }
    if (Fields.has(o, "guided_choice")) {
      given.add("guided_choice");
      List<String> choices = strings(o.get("guided_choice"), "guided_choice");
      c = compile("guided_choice", () -> compiler.choice(choices));
    }
    for (String f : List.of("ebnf", "guided_grammar")) {
      if (Fields.has(o, f)) {
        given.add(f);
        String grammar = grammarText(o, f, f);
        c = compile(f, () -> compiler.ebnf(grammar));
      }
    }
    onlyOne(given, "");
    return c;
  }

  /** The constraint of SGLang's native {@code sampling_params}, or null for none. */
  public static OutputConstraint sglang(ObjectNode sp, ConstraintCompiler compiler) {
    String where = "sampling_params.";
    refuseGrammars(sp, where);
    List<String> given = new ArrayList<>();
    OutputConstraint c = null;
    if (Fields.has(sp, "regex")) {
      given.add("regex");
      String pattern = Fields.string(sp, "regex", null);
      c = compile(where + "regex", () -> compiler.regex(pattern));
    }
    if (Fields.has(sp, "json_schema")) {
      given.add("json_schema");
      JsonNode schema = schemaNode(sp.get("json_schema"), where + "json_schema");
      c = compile(where + "json_schema", () -> compiler.jsonSchema(schema));
    }
    if (Fields.has(sp, "choice")) {
      given.add("choice");
      List<String> choices = strings(sp.get("choice"), where + "choice");
      c = compile(where + "choice", () -> compiler.choice(choices));
    }
    if (Fields.has(sp, "ebnf")) {
      given.add("ebnf");
      String grammar = grammarText(sp, "ebnf", where + "ebnf");
      c = compile(where + "ebnf", () -> compiler.ebnf(grammar));
    }
    onlyOne(given, where);
    return c;
  }

  private static void refuseGrammars(ObjectNode o, String where) {
    for (String f : REFUSED) {
      if (Fields.has(o, f)) {
        throw ApiException.unsupported(
            where + f,
            "'"
                + f
                + "' is not supported; constrain the output with a JSON schema, a regex, an"
                + " EBNF grammar or a choice list instead");
      }
    }
  }

  private static String grammarText(ObjectNode o, String field, String param) {
    JsonNode v = o.get(field);
    if (!v.isTextual() || v.asText().isBlank()) {
      throw ApiException.invalid(
          param, "'" + param + "' must be a string holding an EBNF grammar ('root ::= ...')");
    }
    return v.asText();
  }

  private static void onlyOne(List<String> given, String where) {
    if (given.size() > 1) {
      throw ApiException.invalid(
          where + given.get(1),
          "only one output constraint per request, got " + String.join(" and ", given));
    }
  }

  private static OutputConstraint compile(String param, Supplier<OutputConstraint> build) {
    try {
      return build.get();
    } catch (UnsupportedConstraintException e) {
      throw ApiException.unsupported(param, e.getMessage());
    }
  }

  /** A schema given as an object or as a string holding one (SGLang sends a string). */
  private static JsonNode schemaNode(JsonNode v, String param) {
    if (v.isObject()) {
      return v;
    }
    if (v.isTextual()) {
      try {
        JsonNode n = JSON.readTree(v.asText());
        if (n != null && (n.isObject() || n.isBoolean())) {
          return n;
        }
      } catch (JacksonException e) {
        throw ApiException.invalid(
            param, "'" + param + "' is not valid JSON: " + e.getOriginalMessage());
      }
    }
    throw ApiException.invalid(param, "'" + param + "' must be a JSON schema object (or its text)");
  }

  private static List<String> strings(JsonNode v, String param) {
    if (!v.isArray() || v.isEmpty()) {
      throw ApiException.invalid(param, "'" + param + "' must be a non-empty array of strings");
    }
    List<String> out = new ArrayList<>();
    for (JsonNode s : v) {
      if (!s.isTextual()) {
        throw ApiException.invalid(param, "'" + param + "' must be a non-empty array of strings");
      }
      out.add(s.asText());
    }
    return out;
  }
}
