package dev.ringmaster.engine.constraint;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Regex, choice and JSON schema automata: what they accept and reject, and what they refuse. */
class ByteDfaTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  private static boolean matches(ByteDfa d, String s) {
    return d.matches(s.getBytes(StandardCharsets.UTF_8));
  }

  private static ByteDfa schema(String json) throws Exception {
    return ByteDfa.of(JsonSchemaCompiler.compile(JSON.readTree(json)));
  }

  @Test
  void regexAcceptsExactlyItsLanguage() {
    ByteDfa d = ByteDfa.ofRegex("^(ab|c)+[0-9]{2,3}\\.?$");
    assertThat(matches(d, "ab12")).isTrue();
    assertThat(matches(d, "cabc999.")).isTrue();
    assertThat(matches(d, "ab1")).isFalse();
    assertThat(matches(d, "ab1234")).isFalse();
    assertThat(matches(d, "12")).isFalse();
    assertThat(matches(d, "ba12")).isFalse();
  }

  @Test
  void regexClassesEscapesAndUnicode() {
    ByteDfa d = ByteDfa.ofRegex("[^a-c\\d]\\w*\\s?é.");
    assertThat(matches(d, "xy_9 éz")).isTrue();
    assertThat(matches(d, "ZéЖ")).isTrue(); // '.' takes a two-byte character whole
    assertThat(matches(d, "aé!")).isFalse();
    assertThat(matches(d, "5é!")).isFalse();
    assertThat(matches(d, "xé\n")).isFalse();
    ByteDfa cyr = ByteDfa.ofRegex("[а-я]+");
    assertThat(matches(cyr, "привет")).isTrue();
    assertThat(matches(cyr, "hello")).isFalse();
  }

  @Test
  void regexRefusesWhatItCannotCompile() {
    assertThatThrownBy(() -> ByteDfa.ofRegex("(?=a)b")).hasMessageContaining("lookaround");
    assertThatThrownBy(() -> ByteDfa.ofRegex("(a)\\1")).hasMessageContaining("backreferences");
    assertThatThrownBy(() -> ByteDfa.ofRegex("\\bword")).hasMessageContaining("word boundaries");
    assertThatThrownBy(() -> ByteDfa.ofRegex("(ab")).hasMessageContaining("missing ')'");
    assertThatThrownBy(() -> ByteDfa.ofRegex("*a")).hasMessageContaining("nothing to repeat");
  }

  @Test
  void choiceAcceptsOnlyTheStrings() {
    ByteDfa d = ByteDfa.ofChoices(List.of("yes", "no", "maybe so"));
    assertThat(matches(d, "yes")).isTrue();
    assertThat(matches(d, "maybe so")).isTrue();
    assertThat(matches(d, "ye")).isFalse();
    assertThat(matches(d, "yesno")).isFalse();
    int s = d.start();
    for (byte b : "no".getBytes(StandardCharsets.UTF_8)) {
      s = d.next(s, b);
    }
    assertThat(d.accepting(s)).isTrue();
    assertThat(d.hasExit(s)).isFalse();
  }

  @Test
  void jsonSchemaObjectWithRequiredAndOptionalProperties() throws Exception {
    ByteDfa d =
        schema(
            """
            {"type": "object", "properties": {
              "name": {"type": "string", "maxLength": 5},
              "age": {"type": "integer"},
              "score": {"type": "number"},
              "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 2},
              "pet": {"type": ["null", "object"], "properties": {"ok": {"type": "boolean"}},
                      "required": ["ok"]}},
             "required": ["name", "age"]}""");
    assertThat(matches(d, "{\"name\":\"bob\",\"age\":3}")).isTrue();
    assertThat(matches(d, "{\"name\": \"b\\\"b\", \"age\": -12, \"score\": 1.5e3}")).isTrue();
    assertThat(matches(d, "{\"name\":\"\",\"age\":0,\"tags\":[\"a\",\"b\"],\"pet\":null}"))
        .isTrue();
    assertThat(matches(d, "{\"name\":\"x\",\"age\":1,\"pet\":{\"ok\":true}}")).isTrue();
    assertThat(matches(d, "{\"age\":3}")).as("name is required").isFalse();
    assertThat(matches(d, "{\"name\":\"toolong\",\"age\":3}")).as("maxLength").isFalse();
    assertThat(matches(d, "{\"name\":\"a\",\"age\":3.5}")).as("integer").isFalse();
    assertThat(matches(d, "{\"name\":\"a\",\"age\":01}")).as("leading zero").isFalse();
    assertThat(matches(d, "{\"name\":\"a\",\"age\":1,\"tags\":[\"c\"]}")).as("enum").isFalse();
    assertThat(matches(d, "{\"name\":\"a\",\"age\":1,\"tags\":[\"a\",\"a\",\"a\"]}"))
        .as("maxItems")
        .isFalse();
    assertThat(matches(d, "{\"name\":\"a\",\"age\":1,}")).as("trailing comma").isFalse();
  }

  @Test
  void jsonSchemaRefsFormatsAndAnyJson() throws Exception {
    ByteDfa d =
        schema(
            """
            {"$defs": {"P": {"type": "object", "properties": {"d": {"type": "string",
              "format": "date"}}, "required": ["d"]}},
             "type": "array", "items": {"$ref": "#/$defs/P"}, "minItems": 1}""");
    assertThat(matches(d, "[{\"d\":\"2024-02-29\"}]")).isTrue();
    assertThat(matches(d, "[]")).isFalse();
    assertThat(matches(d, "[{\"d\":\"2024-13-01\"}]")).isFalse();
    ByteDfa any = ByteDfa.of(JsonSchemaCompiler.anyObject());
    assertThat(matches(any, "{\"a\":[1,{\"b\":null}],\"c\":\"x\"}")).isTrue();
    assertThat(matches(any, "[1]")).isFalse();
    assertThat(matches(any, "{\"a\":}")).isFalse();
  }

  @Test
  void jsonSchemaRefusesUnsupportedFeaturesByName() {
    assertThatThrownBy(() -> schema("{\"type\": \"integer\", \"multipleOf\": 2.5}"))
        .isInstanceOf(UnsupportedConstraintException.class)
        .hasMessageContaining("'multipleOf'");
    assertThatThrownBy(() -> schema("{\"type\": \"string\", \"format\": \"email\"}"))
        .hasMessageContaining("format 'email'");
    assertThatThrownBy(
            () ->
                schema(
                    "{\"$defs\": {\"N\": {\"type\": \"object\", \"properties\": {\"n\": {\"$ref\":"
                        + " \"#/$defs/N\"}}}}, \"$ref\": \"#/$defs/N\"}"))
        .hasMessageContaining("recursive $ref");
  }

  @Test
  void schemaOutputsParseAsJson() throws Exception {
    JsonNode parsed = JSON.readTree("{\"name\": \"b\\\"b\", \"age\": -12}");
    assertThat(parsed.get("age").asInt()).isEqualTo(-12);
  }

  @Test
  void aStringPatternOnlyWritesWhatJsonHoldsUnescaped() throws Exception {
    // [^,]* alone would also take a quote, a backslash or a newline, which end or break the JSON.
    ByteDfa d = schema("{\"type\": \"string\", \"pattern\": \"[^,]*\"}");
    assertThat(matches(d, "\"ab c\"")).isTrue();
    assertThat(matches(d, "\"é\"")).isTrue();
    assertThat(matches(d, "\"a,b\"")).isFalse();
    assertThat(matches(d, "\"a\"b\"")).isFalse();
    assertThat(matches(d, "\"a\\\\b\"")).isFalse();
    assertThat(matches(d, "\"a\nb\"")).isFalse();
  }

  @Test
  void stringLengthsCountCodePointsAndNoSurrogateEscapes() throws Exception {
    ByteDfa d = schema("{\"type\": \"string\", \"maxLength\": 1}");
    assertThat(matches(d, "\"\\u00e9\"")).isTrue();
    assertThat(matches(d, "\"\uD83D\uDE00\"")).as("one code point as UTF-8").isTrue();
    // As escapes the same character would be two characters long, and a lone half is not Unicode.
    assertThat(matches(d, "\"\\ud83d\\ude00\"")).isFalse();
    assertThat(matches(d, "\"\\ud83d\"")).isFalse();
  }
}
