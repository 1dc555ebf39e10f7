package dev.ringmaster.server.openai;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ringmaster.server.openai.ToolCallScanner.Partial;
import dev.ringmaster.server.openai.ToolCallScanner.State;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The tool-call scanner on text: JSON call objects, arrays, tags and DeepSeek-V3's tool-call
 * tokens, whole and as prefixes; and the deltas a stream makes of text arriving in random pieces.
 */
class ToolCallScannerTest {
  private static final ToolCallScanner JSON_ONLY =
      new ToolCallScanner(Set.of("add", "get_weather"), Integer.MAX_VALUE, false);
  private static final ToolCallScanner DEEPSEEK =
      new ToolCallScanner(Set.of("add", "get_weather"), Integer.MAX_VALUE, true);

  /** Two calls in DeepSeek-V3's chat-template syntax. */
  static final String DEEPSEEK_TWO_CALLS =
      "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n"
          + "```json\n{\"city\": \"Paris\"}\n```<｜tool▁call▁end｜>\n"
          + "<｜tool▁call▁begin｜>function<｜tool▁sep｜>add\n"
          + "```json\n{\"a\": 2, \"b\": [3, {\"c\": \"}\"}]}\n```<｜tool▁call▁end｜>"
          + "<｜tool▁calls▁end｜>";

  @Test
  void deepSeekToolCallTokensReadBackAsCalls() {
    ToolCallScanner.Scan s = DEEPSEEK.scan(DEEPSEEK_TWO_CALLS);
    assertThat(s.state()).isEqualTo(State.COMPLETE);
    assertThat(s.calls())
        .containsExactly(
            new Partial("get_weather", "{\"city\": \"Paris\"}", true),
            new Partial("add", "{\"a\": 2, \"b\": [3, {\"c\": \"}\"}]}", true));
    // Without a fence, as some fine-tunes write it.
    String bare =
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>add\n{\"a\": 1}"
            + "<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
    assertThat(DEEPSEEK.scan(bare).calls()).containsExactly(new Partial("add", "{\"a\": 1}", true));
    // Only when the tokenizer has the tokens, and only to declared tools.
    assertThat(JSON_ONLY.scan(DEEPSEEK_TWO_CALLS).state()).isEqualTo(State.CONTENT);
    assertThat(DEEPSEEK.scan(DEEPSEEK_TWO_CALLS.replace(">add\n", ">sub\n")).state())
        .isEqualTo(State.BROKEN);
    assertThat(
            new ToolCallScanner(Set.of("add", "get_weather"), 1, true)
                .scan(DEEPSEEK_TWO_CALLS)
                .state())
        .isEqualTo(State.BROKEN);
  }

  @Test
  void everyPrefixOfCallsIsPendingOrCallsWithArgumentsAsFarAsTheyGo() {
    for (String text :
        List.of(
            DEEPSEEK_TWO_CALLS,
            "[{\"name\": \"add\", \"arguments\": {\"a\": 1}}, {\"name\": \"add\", \"arguments\":"
                + " {\"a\": -2.5e3, \"s\": \"x\\\"y\\u00e9\"}}]",
            "<tool_call>\n{\"name\": \"add\", \"arguments\": {}}\n</tool_call>\n<tool_call>"
                + "{\"arguments\": {\"b\": true}, \"name\": \"add\"}</tool_call>")) {
      ToolCallScanner.Scan whole = DEEPSEEK.scan(text);
      assertThat(whole.state()).as(text).isEqualTo(State.COMPLETE);
      for (int n = 0; n < text.length(); n++) {
        ToolCallScanner.Scan s = DEEPSEEK.scan(text.substring(0, n));
        assertThat(s.state())
            .as(text.substring(0, n))
            .isIn(State.PENDING, State.CALLS, State.COMPLETE);
        for (int i = 0; i < s.calls().size(); i++) {
          Partial p = s.calls().get(i);
          Partial full = whole.calls().get(i);
          assertThat(p.name()).isEqualTo(full.name());
          assertThat(full.arguments()).startsWith(p.arguments());
          if (p.complete()) {
            assertThat(p.arguments()).isEqualTo(full.arguments());
          }
        }
      }
    }
  }

  @Test
  void textThatCannotBeCallsIsContent() {
    for (String text :
        List.of(
            "Hello",
            "{\"city\": 1}",
            "{\"name\": \"sub\", \"arguments\": {}}",
            "<p>hi</p>",
            "[1, 2]",
            "{\"name\": \"add\", \"arguments\": 3}")) {
      assertThat(JSON_ONLY.scan(text).state()).as(text).isEqualTo(State.CONTENT);
    }
    ToolCallScanner.Scan s = JSON_ONLY.scan("{\"name\": \"add\", \"arguments\": {}} and more");
    assertThat(s.state()).isEqualTo(State.BROKEN);
    assertThat(s.end()).isEqualTo("{\"name\": \"add\", \"arguments\": {}}".length());
  }

  @Test
  void aStreamInRandomPiecesStartsEachCallOnceAndItsFragmentsAddUpToTheArguments() {
    Random rnd = new Random(7);
    for (int trial = 0; trial < 50; trial++) {
      ToolCallStream stream = new ToolCallStream(DEEPSEEK);
      List<ObjectNode> deltas = new ArrayList<>();
      for (int p = 0; p < DEEPSEEK_TWO_CALLS.length(); ) {
        int n = Math.min(DEEPSEEK_TWO_CALLS.length() - p, 1 + rnd.nextInt(6));
        deltas.addAll(stream.append(DEEPSEEK_TWO_CALLS.substring(p, p + n)));
        p += n;
      }
      deltas.addAll(stream.finish());
      assertThat(stream.completeCalls()).isTrue();
      List<String> names = new ArrayList<>();
      List<StringBuilder> args = new ArrayList<>();
      for (ObjectNode d : deltas) {
        assertThat(d.has("content")).as(d.toString()).isFalse();
        assertThat(d.get("tool_calls")).hasSize(1);
        var call = d.get("tool_calls").get(0);
        int index = call.get("index").asInt();
        if (call.has("id")) {
          assertThat(index).isEqualTo(names.size());
          assertThat(call.get("id").asText()).startsWith("call_");
          assertThat(call.get("type").asText()).isEqualTo("function");
          assertThat(call.at("/function/arguments").asText()).isEmpty();
          names.add(call.at("/function/name").asText());
          args.add(new StringBuilder());
        } else {
          assertThat(call.has("type") || call.at("/function").has("name")).isFalse();
          args.get(index).append(call.at("/function/arguments").asText());
        }
      }
      assertThat(names).containsExactly("get_weather", "add");
      assertThat(args.get(0).toString()).isEqualTo("{\"city\": \"Paris\"}");
      assertThat(args.get(1).toString()).isEqualTo("{\"a\": 2, \"b\": [3, {\"c\": \"}\"}]}");
    }
  }

  @Test
  void aStreamOfContentIsHeldOnlyWhileItMayBeACall() {
    ToolCallStream stream = new ToolCallStream(JSON_ONLY);
    assertThat(stream.append(" {\"na")).isEmpty();
    List<ObjectNode> d = stream.append("tion\": 1}");
    assertThat(d).hasSize(1);
    assertThat(d.getFirst().get("content").asText()).isEqualTo(" {\"nation\": 1}");
    assertThat(stream.append(" more").getFirst().get("content").asText()).isEqualTo(" more");
    assertThat(stream.completeCalls()).isFalse();
    ToolCallStream held = new ToolCallStream(JSON_ONLY);
    assertThat(held.append("<tool_")).isEmpty();
    assertThat(held.finish().getFirst().get("content").asText()).isEqualTo("<tool_");
    ToolCallStream broken = new ToolCallStream(JSON_ONLY);
    List<ObjectNode> b = broken.append("{\"name\": \"add\", \"arguments\": {}} ok");
    assertThat(b).hasSize(3); // the start, the arguments, the text after them as content
    assertThat(b.get(2).get("content").asText()).isEqualTo("ok");
    assertThat(broken.completeCalls()).isFalse();
  }

  @Test
  void contentThenTaggedCallsIsContentUpToTheTagThenCalls() {
    String text =
        "Let me add them. <tool_call>{\"name\": \"add\", \"arguments\": {\"a\": 1}}</tool_call>";
    int tag = text.indexOf("<tool_call>");
    ToolCallScanner.Scan s = JSON_ONLY.scan(text);
    assertThat(s.state()).isEqualTo(State.COMPLETE);
    assertThat(s.contentEnd()).isEqualTo(tag);
    assertThat(s.calls()).containsExactly(new Partial("add", "{\"a\": 1}", true));
    // While it arrives: content is sure up to an unfinished tag, which is held.
    ToolCallScanner.Scan partial = JSON_ONLY.scan(text.substring(0, tag + 5));
    assertThat(partial.state()).isEqualTo(State.CONTENT);
    assertThat(partial.contentEnd()).isEqualTo(tag);
    assertThat(JSON_ONLY.scan(text.substring(0, tag + 20)).state()).isEqualTo(State.PENDING);
    // Bare JSON after prose is no call; a tag that does not start a call is content.
    assertThat(JSON_ONLY.scan("Sure: {\"name\": \"add\", \"arguments\": {}}").calls()).isEmpty();
    ToolCallScanner.Scan notACall = JSON_ONLY.scan("See <tool_call>oops</tool_call>");
    assertThat(notACall.state()).isEqualTo(State.CONTENT);
    assertThat(notACall.contentEnd()).isEqualTo("See <tool_call>oops</tool_call>".length());
  }

  @Test
  void aStreamOfContentThenACallSendsContentDeltasThenCallDeltas() {
    String text = "Adding. <tool_call>{\"name\": \"add\", \"arguments\": {\"a\": 1}}</tool_call>";
    ToolCallStream stream = new ToolCallStream(JSON_ONLY);
    StringBuilder content = new StringBuilder();
    StringBuilder args = new StringBuilder();
    boolean callSeen = false;
    for (int i = 0; i < text.length(); i += 3) {
      for (var d : stream.append(text.substring(i, Math.min(text.length(), i + 3)))) {
        if (d.has("content")) {
          assertThat(callSeen).as("content after a call delta").isFalse();
          content.append(d.get("content").asText());
        } else {
          callSeen = true;
          var f = d.get("tool_calls").get(0).get("function");
          if (f.has("name")) {
            assertThat(f.get("name").asText()).isEqualTo("add");
          }
          args.append(f.get("arguments").asText());
        }
      }
    }
    assertThat(stream.finish()).isEmpty();
    assertThat(stream.completeCalls()).isTrue();
    assertThat(content.toString()).isEqualTo("Adding. ");
    assertThat(args.toString()).isEqualTo("{\"a\": 1}");
  }
}
