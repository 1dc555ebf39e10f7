package dev.ringmaster.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.openai.client.OpenAIClient;
import com.openai.core.JsonValue;
import com.openai.models.ResponseFormatJsonObject;
import com.openai.models.ResponseFormatJsonSchema;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import java.net.http.HttpResponse;
import java.util.Map;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Constrained outputs over HTTP on the random-weight test model: whatever the weights prefer, every
 * output matches its regex, is one of its choices, or parses and fits its schema, for several
 * seeds, greedy and sampled; unsupported constraints get a 400 naming the feature.
 */
class StructuredOutputHttpTest {
  private static final String SCHEMA =
      """
      {"type": "object", "properties": {
        "name": {"type": "string", "maxLength": 6},
        "age": {"type": "integer"},
        "ok": {"type": "boolean"},
        "tags": {"type": "array", "items": {"enum": ["red", "blue"]}, "maxItems": 3}},
       "required": ["name", "age", "ok", "tags"]}""";
  private static TestServer s;
  private static OpenAIClient client;

  @BeforeAll
  static void start() {
    s = TestServer.start();
    client = s.openAi();
  }

  @AfterAll
  static void stop() {
    client.close();
    s.close();
  }

  private static JsonNode generate(String samplingExtra, long seed, double temperature) {
    HttpResponse<String> r =
        s.post(
            "/generate",
            "{\"input_ids\": [5, 6, 7, 8, 9], \"sampling_params\": {\"max_new_tokens\": 200,"
                + " \"seed\": "
                + seed
                + ", \"temperature\": "
                + temperature
                + ", "
                + samplingExtra
                + "}}");
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    JsonNode out = TestServer.json(r.body());
    assertThat(out.at("/meta_info/finish_reason/type").asText()).as(r.body()).isEqualTo("stop");
    return out;
  }

  private static void assertFitsSchema(String text) {
    JsonNode v = TestServer.json(text);
    assertThat(v.isObject()).as(text).isTrue();
    assertThat(v.get("name").isTextual() && v.get("name").asText().length() <= 6).as(text).isTrue();
    assertThat(v.get("age").isIntegralNumber()).as(text).isTrue();
    assertThat(v.get("ok").isBoolean()).as(text).isTrue();
    assertThat(v.get("tags").isArray() && v.get("tags").size() <= 3).as(text).isTrue();
    for (JsonNode t : v.get("tags")) {
      assertThat(t.asText()).isIn("red", "blue");
    }
    assertThat(v.size()).as(text).isEqualTo(4);
  }

  @Test
  void nativeRegexChoiceAndSchemaOutputsAlwaysMatch() {
    Pattern date = Pattern.compile("[0-9]{4}-[0-9]{2}-[0-9]{2}( ok| no)?");
    for (long seed = 1; seed <= 4; seed++) {
      for (double t : new double[] {0, 1.0}) {
        String text =
            generate("\"regex\": \"[0-9]{4}-[0-9]{2}-[0-9]{2}( ok| no)?\"", seed, t)
                .get("text")
                .asText();
        assertThat(date.matcher(text).matches()).as(text).isTrue();
        String choice =
            generate("\"choice\": [\"alpha\", \"beta\", \"gamma delta\"]", seed, t)
                .get("text")
                .asText();
        assertThat(choice).isIn("alpha", "beta", "gamma delta");
        String schema = TestServer.json("{\"s\": " + SCHEMA + "}").get("s").toString();
        String json =
            generate("\"json_schema\": " + TestServer.JSON.valueToTree(schema), seed, t)
                .get("text")
                .asText();
        assertFitsSchema(json);
      }
    }
  }

  @Test
  void openAiResponseFormatsWithTheJavaSdk() throws Exception {
    Map<String, JsonValue> schema =
        TestServer.JSON
            .readValue(
                SCHEMA, new com.fasterxml.jackson.core.type.TypeReference<Map<String, Object>>() {})
            .entrySet()
            .stream()
            .collect(
                java.util.stream.Collectors.toMap(
                    Map.Entry::getKey, e -> JsonValue.from(e.getValue())));
    for (long seed = 1; seed <= 3; seed++) {
      ChatCompletion chat =
          client
              .chat()
              .completions()
              .create(
                  ChatCompletionCreateParams.builder()
                      .model(TestServer.MODEL)
                      .addUserMessage("Describe a person as JSON.")
                      .maxCompletionTokens(200)
                      .putAdditionalBodyProperty("seed", JsonValue.from(seed))
                      .temperature(1.0)
                      .responseFormat(
                          ResponseFormatJsonSchema.builder()
                              .jsonSchema(
                                  ResponseFormatJsonSchema.JsonSchema.builder()
                                      .name("person")
                                      .schema(
                                          ResponseFormatJsonSchema.JsonSchema.Schema.builder()
                                              .additionalProperties(schema)
                                              .build())
                                      .build())
                              .build())
                      .build());
      String text = chat.choices().getFirst().message().content().orElseThrow();
      assertFitsSchema(text);
      ChatCompletion any =
          client
              .chat()
              .completions()
              .create(
                  ChatCompletionCreateParams.builder()
                      .model(TestServer.MODEL)
                      .addUserMessage("Any JSON object.")
                      .maxCompletionTokens(200)
                      .putAdditionalBodyProperty("seed", JsonValue.from(seed))
                      .temperature(0.7)
                      .responseFormat(ResponseFormatJsonObject.builder().build())
                      .build());
      ChatCompletion.Choice c = any.choices().getFirst();
      if (c.finishReason() == ChatCompletion.Choice.FinishReason.STOP) {
        assertThat(TestServer.json(c.message().content().orElseThrow()).isObject()).isTrue();
      } else {
        assertThat(c.message().content().orElseThrow()).startsWith("{");
      }
    }
  }

  @Test
  void unsupportedConstraintsGetA400NamingThem() {
    HttpResponse<String> r =
        s.post(
            "/v1/completions",
            "{\"prompt\": \"x\", \"max_tokens\": 5, \"response_format\": {\"type\":"
                + " \"json_schema\", \"json_schema\": {\"name\": \"n\", \"schema\": {\"type\":"
                + " \"integer\", \"multipleOf\": 0.5}}}}");
    assertThat(r.statusCode()).isEqualTo(400);
    assertThat(r.body()).contains("'multipleOf'").contains("response_format.json_schema.schema");
    r = s.post("/v1/completions", "{\"prompt\": \"x\", \"max_tokens\": 5, \"regex\": \"(?=a)\"}");
    assertThat(r.statusCode()).isEqualTo(400);
    assertThat(r.body()).contains("lookaround");
    r =
        s.post(
            "/generate",
            "{\"text\": \"x\", \"sampling_params\": {\"ebnf\": \"root ::= (= \\\"a\\\")\"}}");
    assertThat(r.statusCode()).isEqualTo(400);
    assertThat(r.body()).contains("sampling_params.ebnf").contains("lookahead");
    r =
        s.post(
            "/v1/completions", "{\"prompt\": \"x\", \"guided_grammar\": \"start ::= \\\"a\\\"\"}");
    assertThat(r.statusCode()).isEqualTo(400);
    assertThat(r.body()).contains("guided_grammar").contains("'root'");
    r =
        s.post(
            "/v1/completions", "{\"prompt\": \"x\", \"regex\": \"a\", \"guided_choice\": [\"a\"]}");
    assertThat(r.statusCode()).isEqualTo(400);
    assertThat(r.body()).contains("only one output constraint");
  }
}
