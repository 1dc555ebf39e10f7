package dev.ringmaster.server.openai;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ringmaster.model.tokenizer.ChatTemplate;
import dev.ringmaster.server.api.Json;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * How tools and tool-call history reach the prompt: through the template's {@code tools} variable
 * and message fields when it renders them, as a system text otherwise; and which replies read back
 * as calls.
 */
class ToolPromptTest {
  /** A template in the style of Qwen3's: tools as JSON, calls and results in their own tags. */
  private static final ChatTemplate TOOL_TEMPLATE =
      ChatTemplate.parse(
          "{% if tools %}<tools>{% for t in tools %}{{ t.function | tojson }}{% endfor %}</tools>\n"
              + "{% endif %}{% for m in messages %}{{ m.role }}:{% if m.tool_calls %}"
              + "{% for c in m.tool_calls %}<call>{{ c.function.name }} {{ c.function.arguments }}"
              + "</call>{% endfor %}{% elif m.role == 'tool' %}<result id={{ m.tool_call_id }}>"
              + "{{ m.content }}</result>{% else %}{{ m.content }}{% endif %}\n{% endfor %}"
              + "{% if add_generation_prompt %}assistant:{% endif %}",
          null, null);

  private static final ChatTemplate PLAIN_TEMPLATE =
      ChatTemplate.parse(
          "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}assistant:",
          null, null);
  private static final String TOOLS =
      "[{\"type\": \"function\", \"function\": {\"name\": \"add\", \"description\": \"Adds\","
          + " \"parameters\": {\"type\": \"object\", \"properties\": {\"a\": {\"type\":"
          + " \"integer\"}}}}}]";
  private static final String HISTORY =
      "[{\"role\": \"user\", \"content\": \"1?\"}, {\"role\": \"assistant\", \"tool_calls\":"
          + " [{\"id\": \"c1\", \"type\": \"function\", \"function\": {\"name\": \"add\","
          + " \"arguments\": \"{\\\"a\\\": 1}\"}}]}, {\"role\": \"tool\", \"tool_call_id\": \"c1\","
          + " \"content\": \"2\"}]";

  private static ObjectNode body(String extra) {
    return Json.parseObject(
        ("{\"messages\": " + HISTORY + ", \"tools\": " + TOOLS + extra + "}").getBytes());
  }

  private static String render(ChatTemplate t, String extra) {
    ObjectNode b = body(extra);
    return ChatPrompt.render(b, t, ToolRequest.parse(b, false));
  }

  @Test
  void aToolAwareTemplateGetsTheToolsAndTheCallHistory() {
    String p = render(TOOL_TEMPLATE, "");
    assertThat(p)
        .startsWith("<tools>{\"name\": \"add\", \"description\": \"Adds\", \"parameters\":")
        .contains("assistant:<call>add {\"a\": 1}</call>")
        .contains("tool:<result id=c1>2</result>")
        .endsWith("assistant:");
    assertThat(render(TOOL_TEMPLATE, ", \"tool_choice\": \"none\"")).doesNotContain("<tools>");
  }

  @Test
  void aPlainTemplateGetsASystemTextAndCallsAsJson() {
    String p = render(PLAIN_TEMPLATE, ", \"tool_choice\": \"required\"");
    assertThat(p)
        .startsWith("system: Call one of these tools. Reply with only a JSON object")
        .contains("- add: Adds\n  parameters: {\"type\":\"object\"")
        .contains("assistant: {\"name\":\"add\",\"arguments\":{\"a\":1}}\n")
        .contains("tool: 2\n");
    assertThat(render(PLAIN_TEMPLATE, ", \"tool_choice\": \"none\"")).startsWith("user: 1?");
  }

  @Test
  void onlyWholeCallsToDeclaredToolsReadBackAsCalls() {
    ToolRequest auto = ToolRequest.parse(body(""), false);
    List<ToolRequest.Call> c = auto.parseCalls(" {\"name\": \"add\", \"arguments\": {\"a\": 4}}\n");
    assertThat(c).containsExactly(new ToolRequest.Call("add", "{\"a\": 4}"));
    assertThat(auto.parseCalls("<tool_call>\n{\"name\": \"add\", \"arguments\": {}}\n</tool_call>"))
        .hasSize(1);
    assertThat(auto.parseCalls("<tool_call>{\"name\": \"add\", \"arguments\": {}}")).isEmpty();
    assertThat(auto.parseCalls("{\"name\": \"sub\", \"arguments\": {}}")).isEmpty();
    assertThat(auto.parseCalls("{\"name\": \"add\", \"arguments\": 3}")).isEmpty();
    assertThat(auto.parseCalls("{\"name\": \"add\", \"arguments\": {}, \"x\": 1}")).isEmpty();
    assertThat(auto.parseCalls("Sure: {\"name\": \"add\", \"arguments\": {}}")).isEmpty();
    assertThat(auto.parseCalls("{\"name\": \"add\", \"arguments\": {")).isEmpty();
    ToolRequest none = ToolRequest.parse(body(", \"tool_choice\": \"none\""), false);
    assertThat(none.parseCalls("{\"name\": \"add\", \"arguments\": {}}")).isEmpty();
  }

  @Test
  void severalCallsReadBackUnlessParallelToolCallsIsFalse() {
    String two =
        "[{\"name\": \"add\", \"arguments\": {\"a\": 1}}, {\"arguments\": {\"a\": 2},"
            + " \"name\": \"add\"}]";
    String tagged =
        "<tool_call>{\"name\": \"add\", \"arguments\": {\"a\": 1}}</tool_call>\n"
            + "<tool_call>{\"name\": \"add\", \"arguments\": {\"a\": 2}}</tool_call>";
    ToolRequest parallel = ToolRequest.parse(body(""), false);
    assertThat(parallel.parseCalls(two))
        .containsExactly(
            new ToolRequest.Call("add", "{\"a\": 1}"), new ToolRequest.Call("add", "{\"a\": 2}"));
    assertThat(parallel.parseCalls(tagged)).hasSize(2);
    ToolRequest single = ToolRequest.parse(body(", \"parallel_tool_calls\": false"), false);
    assertThat(single.parseCalls(two)).isEmpty();
    assertThat(single.parseCalls(tagged)).isEmpty();
    assertThat(single.parseCalls("[{\"name\": \"add\", \"arguments\": {}}]")).hasSize(1);
  }

  @Test
  void theCallSchemaIsAnyOfOverTheCallableToolsOrAnArrayOfThem() {
    String named = ", \"tool_choice\": {\"type\": \"function\", \"function\": {\"name\": \"add\"}}";
    JsonNode schema =
        ToolRequest.parse(body(named + ", \"parallel_tool_calls\": false"), false).callSchema();
    assertThat(schema.get("anyOf")).hasSize(1);
    assertThat(schema.at("/anyOf/0/properties/name/const").asText()).isEqualTo("add");
    assertThat(schema.at("/anyOf/0/properties/arguments/properties/a/type").asText())
        .isEqualTo("integer");
    JsonNode parallel = ToolRequest.parse(body(named), false).callSchema();
    assertThat(parallel.at("/anyOf/0/anyOf/0/properties/name/const").asText()).isEqualTo("add");
    assertThat(parallel.at("/anyOf/1/type").asText()).isEqualTo("array");
    assertThat(parallel.at("/anyOf/1/minItems").asInt()).isEqualTo(1);
    assertThat(parallel.at("/anyOf/1/items")).isEqualTo(parallel.at("/anyOf/0"));
  }
}
