package dev.ringmaster.model.tokenizer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ringmaster.model.tokenizer.jinja.Template;
import dev.ringmaster.model.tokenizer.jinja.TemplateException;
import dev.ringmaster.testing.ReferenceJson;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * The Jinja subset against jinja2 configured as transformers configures it (expected strings in
 * fixtures/tokenizer/jinja_reference.json.gz), plus errors. The DeepSeek-V3 template itself is
 * checked in {@link TokenizerDeepSeekV3ReferenceTest}.
 */
class TokenizerChatTemplateTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @TestFactory
  Stream<DynamicTest> rendersLikeJinja2() throws IOException {
    JsonNode reference = ReferenceJson.read(TestData.fixture("jinja_reference.json.gz"));
    List<DynamicTest> tests = new ArrayList<>();
    for (JsonNode c : reference.get("cases")) {
      String source = c.get("template").asText();
      Map<String, Object> vars = JSON.convertValue(c.get("vars"), new TypeReference<>() {});
      tests.add(
          DynamicTest.dynamicTest(
              source.replace("\n", "\\n"),
              () ->
                  assertThat(Template.parse(source).render(vars))
                      .isEqualTo(c.get("expected").asText())));
    }
    return tests.stream();
  }

  @Test
  void unsupportedConstructNamesItAndTheLine() {
    assertThatThrownBy(() -> Template.parse("line one\n{% macro greet(x) %}hi{% endmacro %}"))
        .isInstanceOf(TemplateException.class)
        .hasMessageContaining("macro")
        .hasMessageContaining("template line 2");
    assertThatThrownBy(() -> Template.parse("{{ x | wordwrap }}").render(Map.of("x", "a")))
        .hasMessageContaining("wordwrap")
        .hasMessageContaining("template line 1");
    assertThatThrownBy(() -> Template.parse("\n\n{{ x is prime }}").render(Map.of("x", 3)))
        .hasMessageContaining("is prime")
        .hasMessageContaining("template line 3");
    assertThatThrownBy(() -> Template.parse("{% if x %}open"))
        .isInstanceOf(TemplateException.class);
  }

  @Test
  void raiseExceptionFailsTheRenderWithItsMessage() {
    Template t =
        Template.parse(
            "{% for m in messages %}{% if m.role not in ['user', 'assistant'] %}"
                + "{{ raise_exception('Unknown role: ' + m.role) }}{% endif %}{% endfor %}");
    assertThatThrownBy(() -> t.render(Map.of("messages", List.of(Map.of("role", "robot")))))
        .isInstanceOf(TemplateException.class)
        .hasMessageContaining("Unknown role: robot");
  }

  @Test
  void chatTemplateFillsInBosAndEos() {
    ChatTemplate t =
        ChatTemplate.parse(
            "{{ bos_token }}{% for m in messages %}{{ m.role }}: {{ m.content }}{{ eos_token }}"
                + "{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}",
            "<s>", "</s>");
    String rendered =
        t.render(List.of(new ChatMessage("user", "hi"), new ChatMessage("assistant", "yo")), true);
    assertThat(rendered).isEqualTo("<s>user: hi</s>assistant: yo</s>assistant:");
  }

  @Test
  void deepSeekTemplateRendersToolCallsWhenContentIsNone() {
    ChatTemplate t = TestData.deepSeekV3().chatTemplate().orElseThrow();
    Map<String, Object> call =
        Map.of(
            "type",
            "function",
            "function",
            Map.of("name", "get_weather", "arguments", "{\"city\": \"Paris\"}"));
    Map<String, Object> assistant = new java.util.HashMap<>();
    assistant.put("role", "assistant");
    assistant.put("content", null);
    assistant.put("tool_calls", List.of(call));
    String rendered =
        t.render(
            Map.of(
                "messages",
                List.of(Map.of("role", "user", "content", "Weather?"), assistant),
                "add_generation_prompt",
                false));
    assertThat(rendered)
        .isEqualTo(
            "<｜begin▁of▁sentence｜><｜User｜>Weather?<｜Assistant｜><｜tool▁calls▁begin｜>"
                + "<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n"
                + "{\"city\": \"Paris\"}\n```<｜tool▁call▁end｜>");
  }
}
