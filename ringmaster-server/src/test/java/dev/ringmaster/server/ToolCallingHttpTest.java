package dev.ringmaster.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.openai.client.OpenAIClient;
import com.openai.core.JsonValue;
import com.openai.models.FunctionDefinition;
import com.openai.models.FunctionParameters;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import com.openai.models.chat.completions.ChatCompletionMessageFunctionToolCall;
import com.openai.models.chat.completions.ChatCompletionMessageToolCall;
import com.openai.models.chat.completions.ChatCompletionNamedToolChoice;
import com.openai.models.chat.completions.ChatCompletionToolChoiceOption;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * OpenAI tool calling over HTTP on the random-weight test model: a required or named tool choice
 * always yields calls the SDK parses, whose arguments fit the tools' schemas, for several seeds,
 * and streams each call's start and then its arguments in pieces; {@code none} yields plain
 * content; a history with tool calls and tool results is accepted; bad tools get a 400 naming the
 * field.
 */
class ToolCallingHttpTest {
  private static final String WEATHER =
      """
      {"type": "object", "properties": {
        "city": {"type": "string", "maxLength": 8},
        "unit": {"enum": ["celsius", "fahrenheit"]}},
       "required": ["city", "unit"]}""";
  private static final String ADD =
      """
      {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
       "required": ["a", "b"], "additionalProperties": false}""";
  private static final String TOOLS_JSON =
      "[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\":"
          + " \"Current weather\", \"parameters\": "
          + WEATHER
          + "}}, {\"type\": \"function\", \"function\": {\"name\": \"add\", \"parameters\": "
          + ADD
          + "}}]";

  /**
   * A tool-aware template as terse as the 256-position test model needs: tool names only, calls and
   * results in tags.
   */
  private static final String TEMPLATE =
      "{% if tools %}<|bos|>tools:{% for t in tools %} {{ t.function.name }}{% endfor %}\n"
          + "{% endif %}{% for m in messages %}<|bos|>{{ m.role }}: {% if m.tool_calls %}"
          + "{% for c in m.tool_calls %}<call>{{ c.function.name }}{{ c.function.arguments }}"
          + "</call>{% endfor %}{% elif m.role == 'tool' %}<r {{ m.tool_call_id }}>{{ m.content }}"
          + "{% else %}{{ m['content'] }}{% endif %}\n{% endfor %}"
          + "{% if add_generation_prompt %}assistant:{% endif %}";

  private static TestServer s;
  private static OpenAIClient client;

  @BeforeAll
  static void start() {
    s = TestServer.withTemplate(TEMPLATE);
    client = s.openAi();
  }

  @AfterAll
  static void stop() {
    client.close();
    s.close();
  }

  private static FunctionDefinition function(String name, String schema) {
    Map<String, Object> map =
        TestServer.JSON.convertValue(
            TestServer.json(schema),
            new com.fasterxml.jackson.core.type.TypeReference<Map<String, Object>>() {});
    FunctionParameters.Builder p = FunctionParameters.builder();
    map.forEach((k, v) -> p.putAdditionalProperty(k, JsonValue.from(v)));
    return FunctionDefinition.builder().name(name).parameters(p.build()).build();
  }

  private static ChatCompletionCreateParams.Builder request(long seed, double temperature) {
    return ChatCompletionCreateParams.builder()
        .model(TestServer.MODEL)
        .addUserMessage("Paris weather, or 2 + 3?")
        .addFunctionTool(function("get_weather", WEATHER))
        .addFunctionTool(function("add", ADD))
        .maxCompletionTokens(160)
        .temperature(temperature)
        .putAdditionalBodyProperty("seed", JsonValue.from(seed));
  }

  private static void assertFits(String name, String arguments) {
    JsonNode a = TestServer.json(arguments);
    assertThat(a.isObject()).as(arguments).isTrue();
    if (name.equals("get_weather")) {
      assertThat(a.get("city").isTextual() && a.get("city").asText().codePoints().count() <= 8)
          .as(arguments)
          .isTrue();
      assertThat(a.get("unit").asText()).isIn("celsius", "fahrenheit");
      assertThat(a.size()).as(arguments).isEqualTo(2);
    } else {
      assertThat(name).isEqualTo("add");
      assertThat(a.get("a").isIntegralNumber() && a.get("b").isIntegralNumber())
          .as(arguments)
          .isTrue();
      assertThat(a.size()).as(arguments).isEqualTo(2);
    }
  }

  private static List<ChatCompletionMessageFunctionToolCall> calls(ChatCompletion chat) {
    ChatCompletion.Choice c = chat.choices().getFirst();
    assertThat(c.finishReason()).isEqualTo(ChatCompletion.Choice.FinishReason.TOOL_CALLS);
    assertThat(c.message().content()).isEmpty();
    List<ChatCompletionMessageToolCall> calls = c.message().toolCalls().orElseThrow();
    assertThat(calls).isNotEmpty();
    List<ChatCompletionMessageFunctionToolCall> out = new ArrayList<>();
    for (ChatCompletionMessageToolCall t : calls) {
      ChatCompletionMessageFunctionToolCall call = t.function().orElseThrow();
      assertThat(call.id()).startsWith("call_");
      out.add(call);
    }
    return out;
  }

  @Test
  void requiredToolChoiceAlwaysYieldsACallThatFitsItsSchema() {
    for (long seed = 1; seed <= 4; seed++) {
      for (double t : new double[] {0, 1.0}) {
        ChatCompletion chat =
            client
                .chat()
                .completions()
                .create(
                    request(seed, t)
                        .toolChoice(ChatCompletionToolChoiceOption.Auto.REQUIRED)
                        .build());
        for (ChatCompletionMessageFunctionToolCall call : calls(chat)) {
          assertFits(call.function().name(), call.function().arguments());
        }
      }
    }
  }

  @Test
  void aNamedToolChoiceCallsThatTool() {
    for (long seed = 1; seed <= 3; seed++) {
      ChatCompletion chat =
          client
              .chat()
              .completions()
              .create(
                  request(seed, 1.0)
                      .toolChoice(
                          ChatCompletionNamedToolChoice.builder()
                              .function(
                                  ChatCompletionNamedToolChoice.Function.builder()
                                      .name("add")
                                      .build())
                              .build())
                      .build());
      for (ChatCompletionMessageFunctionToolCall call : calls(chat)) {
        assertThat(call.function().name()).isEqualTo("add");
        assertFits("add", call.function().arguments());
      }
    }
  }

  @Test
  void toolChoiceNoneGivesContentAndLeavesTheToolsOutOfThePrompt() {
    String user = "{\"role\": \"user\", \"content\": \"hi\"}";
    JsonNode none =
        chat(
            "{\"messages\": ["
                + user
                + "], \"max_tokens\": 8, \"tools\": "
                + TOOLS_JSON
                + ", \"tool_choice\": \"none\"}");
    JsonNode plain = chat("{\"messages\": [" + user + "], \"max_tokens\": 8}");
    JsonNode auto =
        chat("{\"messages\": [" + user + "], \"max_tokens\": 8, \"tools\": " + TOOLS_JSON + "}");
    JsonNode msg = none.at("/choices/0/message");
    assertThat(msg.has("tool_calls")).isFalse();
    assertThat(msg.get("content").isTextual()).isTrue();
    assertThat(none.at("/choices/0/finish_reason").asText()).isNotEqualTo("tool_calls");
    int plainTokens = plain.at("/usage/prompt_tokens").asInt();
    assertThat(none.at("/usage/prompt_tokens").asInt()).isEqualTo(plainTokens);
    // The template lists the tools' names when it is given them.
    assertThat(auto.at("/usage/prompt_tokens").asInt()).isGreaterThan(plainTokens + 10);
  }

  @Test
  void streamingARequiredCallStartsEachCallThenStreamsItsArguments() {
    String body =
        "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"max_tokens\": 160,"
            + " \"seed\": 3, \"temperature\": 1.0, \"tools\": "
            + TOOLS_JSON
            + ", \"tool_choice\": \"required\"";
    JsonNode whole = chat(body + "}");
    assertThat(whole.at("/choices/0/finish_reason").asText()).isEqualTo("tool_calls");
    HttpResponse<String> r = s.post("/v1/chat/completions", body + ", \"stream\": true}");
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    List<JsonNode> chunks = new ArrayList<>();
    for (String line : r.body().split("\n")) {
      if (line.startsWith("data: {")) {
        chunks.add(TestServer.json(line.substring(6)));
      }
    }
    assertThat(chunks.getFirst().at("/choices/0/delta/role").asText()).isEqualTo("assistant");
    List<String> names = new ArrayList<>();
    List<StringBuilder> args = new ArrayList<>();
    String finish = null;
    int fragments = 0;
    for (JsonNode c : chunks) {
      JsonNode d = c.at("/choices/0/delta");
      assertThat(d.path("content").isTextual()).as(c.toString()).isFalse();
      for (JsonNode call : d.path("tool_calls")) {
        int index = call.get("index").asInt();
        if (call.has("id")) {
          assertThat(index).isEqualTo(names.size());
          assertThat(call.get("type").asText()).isEqualTo("function");
          assertThat(call.at("/function/arguments").asText()).isEmpty();
          names.add(call.at("/function/name").asText());
          args.add(new StringBuilder());
        } else {
          args.get(index).append(call.at("/function/arguments").asText());
          fragments++;
        }
      }
      if (c.at("/choices/0/finish_reason").isTextual()) {
        finish = c.at("/choices/0/finish_reason").asText();
      }
    }
    assertThat(finish).isEqualTo("tool_calls");
    assertThat(fragments).isGreaterThan(names.size()); // the arguments came in pieces
    JsonNode calls = whole.at("/choices/0/message/tool_calls");
    assertThat(names).hasSize(calls.size());
    for (int i = 0; i < names.size(); i++) {
      assertThat(names.get(i)).isEqualTo(calls.get(i).at("/function/name").asText());
      assertThat(args.get(i).toString()).isEqualTo(calls.get(i).at("/function/arguments").asText());
      assertFits(names.get(i), args.get(i).toString());
    }
  }

  @Test
  void aHistoryWithAToolCallAndItsResultIsAccepted() {
    String body =
        "{\"max_tokens\": 8, \"tools\": "
            + TOOLS_JSON
            + ", \"messages\": ["
            + "{\"role\": \"user\", \"content\": \"2 + 3?\"},"
            + "{\"role\": \"assistant\", \"content\": null, \"tool_calls\": [{\"id\": \"call_1\","
            + " \"type\": \"function\", \"function\": {\"name\": \"add\", \"arguments\":"
            + " \"{\\\"a\\\": 2, \\\"b\\\": 3}\"}}]},"
            + "{\"role\": \"tool\", \"tool_call_id\": \"call_1\", \"content\": \"5\"}]}";
    JsonNode out = chat(body);
    assertThat(out.at("/choices/0/message/role").asText()).isEqualTo("assistant");
    HttpResponse<String> r =
        s.post("/v1/chat/completions", body.replace(", \\\"b\\\": 3}\"", ", \\\"b\\\": 3\""));
    assertThat(r.statusCode()).isEqualTo(400);
    assertThat(r.body()).contains("messages[1].tool_calls[0].function.arguments");
    r = s.post("/v1/chat/completions", body.replace("\"tool_call_id\": \"call_1\", ", ""));
    assertThat(r.statusCode()).isEqualTo(400);
    assertThat(r.body()).contains("messages[2].tool_call_id");
  }

  @Test
  void badToolsGetA400NamingTheField() {
    String msg = "\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]";
    assertBad(
        "{" + msg + ", \"tools\": [{\"type\": \"function\", \"function\": {\"parameters\": {}}}]}",
        "tools[0].function.name");
    assertBad(
        "{" + msg + ", \"tools\": " + TOOLS_JSON.replace("\"add\"", "\"get_weather\"") + "}",
        "tools[1].function.name");
    assertBad(
        "{"
            + msg
            + ", \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\","
            + " \"parameters\": \"object\"}}]}",
        "tools[0].function.parameters");
    // A schema keyword the constraint compiler does not take, when the call is forced.
    assertBad(
        "{"
            + msg
            + ", \"tool_choice\": \"required\", \"tools\": [{\"type\": \"function\","
            + " \"function\": {\"name\": \"f\", \"parameters\": {\"type\": \"object\","
            + " \"properties\": {\"n\": {\"type\": \"integer\", \"multipleOf\": 0.5}}}}}]}",
        "tools[0].function.parameters");
    assertBad(
        "{"
            + msg
            + ", \"tools\": "
            + TOOLS_JSON
            + ", \"tool_choice\": {\"type\": \"function\","
            + " \"function\": {\"name\": \"nope\"}}}",
        "tool_choice.function.name");
    assertBad(
        "{" + msg + ", \"tool_choice\": \"sometimes\", \"tools\": " + TOOLS_JSON + "}",
        "tool_choice");
    assertBad(
        "{"
            + msg
            + ", \"tool_choice\": \"required\", \"tools\": "
            + TOOLS_JSON
            + ", \"response_format\": {\"type\": \"json_object\"}}",
        "tool_choice");
    HttpResponse<String> r =
        s.post("/v1/completions", "{\"prompt\": \"x\", \"tools\": " + TOOLS_JSON + "}");
    assertThat(r.statusCode()).isEqualTo(400);
    assertThat(r.body()).contains("/v1/chat/completions");
  }

  private static void assertBad(String body, String param) {
    HttpResponse<String> r = s.post("/v1/chat/completions", body);
    assertThat(r.statusCode()).as(r.body()).isEqualTo(400);
    assertThat(TestServer.json(r.body()).at("/error/param").asText()).isEqualTo(param);
  }

  private static JsonNode chat(String body) {
    HttpResponse<String> r = s.post("/v1/chat/completions", body);
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    return TestServer.json(r.body());
  }
}
