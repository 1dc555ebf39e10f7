package dev.ringmaster.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.openai.client.OpenAIClient;
import com.openai.core.JsonValue;
import com.openai.core.http.StreamResponse;
import com.openai.helpers.ChatCompletionAccumulator;
import com.openai.models.FunctionDefinition;
import com.openai.models.FunctionParameters;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionChunk;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import com.openai.models.chat.completions.ChatCompletionMessageFunctionToolCall;
import com.openai.models.chat.completions.ChatCompletionMessageToolCall;
import com.openai.models.chat.completions.ChatCompletionNamedToolChoice;
import com.openai.models.chat.completions.ChatCompletionToolChoiceOption;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Several tool calls per reply on the embedded model, through the OpenAI Java SDK: a reply of two
 * calls (shaped by a {@code regex}, in {@code auto}) becomes two {@code tool_calls} with their own
 * ids and indexes; {@code parallel_tool_calls: false} reads it as content; the SDK's stream
 * accumulator rebuilds, from the streamed deltas, exactly the calls the non-streamed reply has, for
 * required, named and auto choices; a reply of text and then a call (in {@code <tool_call>} tags)
 * comes as content and a tool call, streamed as content deltas and then tool-call deltas.
 */
class ParallelToolCallsHttpTest {
  private static final String ADD =
      """
      {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
       "required": ["a", "b"], "additionalProperties": false}""";
  private static final String NOTE =
      """
      {"type": "object", "properties": {"text": {"type": "string", "maxLength": 12}},
       "required": ["text"], "additionalProperties": false}""";

  /** Two calls, the second's text left to the model. */
  private static final String TWO_CALLS =
      "\\[\\{\"name\": \"add\", \"arguments\": \\{\"a\": [0-9], \"b\": [0-9]\\}\\},"
          + " \\{\"name\": \"note\", \"arguments\": \\{\"text\": \"[a-z ]{1,10}\"\\}\\}\\]";

  /** A sentence, then one call in tags. */
  private static final String CONTENT_THEN_CALL =
      "[A-Z][a-z]{2,8}\\. <tool_call>\\{\"name\": \"add\", \"arguments\": \\{\"a\": [0-9],"
          + " \"b\": [0-9]\\}\\}</tool_call>";

  private static TestServer s;
  private static OpenAIClient client;

  @BeforeAll
  static void start() {
    s = TestServer.embedded();
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

  private static ChatCompletionCreateParams request(
      long seed, UnaryOperator<ChatCompletionCreateParams.Builder> more) {
    return more.apply(
            ChatCompletionCreateParams.builder()
                .model(TestServer.MODEL)
                .addUserMessage("Add 2 and 3, then note the result.")
                .addFunctionTool(function("add", ADD))
                .addFunctionTool(function("note", NOTE))
                .maxCompletionTokens(200)
                .temperature(1.0)
                .putAdditionalBodyProperty("seed", JsonValue.from(seed)))
        .build();
  }

  private static ChatCompletion streamed(ChatCompletionCreateParams p) {
    ChatCompletionAccumulator acc = ChatCompletionAccumulator.create();
    try (StreamResponse<ChatCompletionChunk> stream =
        client.chat().completions().createStreaming(p)) {
      stream.stream().forEach(acc::accumulate);
    }
    return acc.chatCompletion();
  }

  private static List<ChatCompletionMessageFunctionToolCall> calls(ChatCompletion chat) {
    ChatCompletion.Choice c = chat.choices().getFirst();
    assertThat(c.finishReason()).isEqualTo(ChatCompletion.Choice.FinishReason.TOOL_CALLS);
    assertThat(c.message().content()).isEmpty();
    return c.message().toolCalls().orElseThrow().stream()
        .map(t -> t.function().orElseThrow())
        .toList();
  }

  /** The same calls, ids aside (each reply makes its own). */
  private static void assertSameCalls(
      List<ChatCompletionMessageFunctionToolCall> a,
      List<ChatCompletionMessageFunctionToolCall> b) {
    assertThat(a).hasSameSizeAs(b);
    for (int i = 0; i < a.size(); i++) {
      assertThat(a.get(i).function()).isEqualTo(b.get(i).function());
      assertThat(a.get(i).id()).startsWith("call_");
      assertThat(b.get(i).id()).startsWith("call_");
    }
  }

  @Test
  void aReplyOfTwoCallsBecomesTwoToolCallsStreamedAndNot() {
    for (long seed = 1; seed <= 3; seed++) {
      ChatCompletionCreateParams p =
          request(seed, b -> b.putAdditionalBodyProperty("regex", JsonValue.from(TWO_CALLS)));
      List<ChatCompletionMessageFunctionToolCall> whole =
          calls(client.chat().completions().create(p));
      assertThat(whole).extracting(c -> c.function().name()).containsExactly("add", "note");
      assertThat(whole.get(0).id()).isNotEqualTo(whole.get(1).id());
      JsonNode args = TestServer.json(whole.get(1).function().arguments());
      assertThat(args.get("text").asText()).matches("[a-z ]{1,10}");
      assertSameCalls(whole, calls(streamed(p)));
    }
  }

  @Test
  void parallelToolCallsFalseReadsTwoCallsAsContent() {
    ChatCompletion chat =
        client
            .chat()
            .completions()
            .create(
                request(
                    1,
                    b ->
                        b.parallelToolCalls(false)
                            .putAdditionalBodyProperty("regex", JsonValue.from(TWO_CALLS))));
    ChatCompletion.Choice c = chat.choices().getFirst();
    assertThat(c.finishReason()).isEqualTo(ChatCompletion.Choice.FinishReason.STOP);
    assertThat(c.message().toolCalls().orElse(List.of())).isEmpty();
    assertThat(c.message().content().orElseThrow()).startsWith("[{\"name\": \"add\"");
  }

  @Test
  void theStreamAccumulatesToTheCallsOfTheReplyForRequiredAndNamedChoices() {
    for (long seed = 1; seed <= 3; seed++) {
      for (ChatCompletionCreateParams p :
          List.of(
              request(seed, b -> b.toolChoice(ChatCompletionToolChoiceOption.Auto.REQUIRED)),
              request(
                  seed,
                  b ->
                      b.parallelToolCalls(false)
                          .toolChoice(
                              ChatCompletionNamedToolChoice.builder()
                                  .function(
                                      ChatCompletionNamedToolChoice.Function.builder()
                                          .name("note")
                                          .build())
                                  .build())))) {
        List<ChatCompletionMessageFunctionToolCall> whole =
            calls(client.chat().completions().create(p));
        for (ChatCompletionMessageFunctionToolCall c : whole) {
          JsonNode args = TestServer.json(c.function().arguments());
          assertThat(args.isObject()).as(c.function().arguments()).isTrue();
        }
        if (p.parallelToolCalls().orElse(true)) {
          assertThat(whole).isNotEmpty();
        } else {
          assertThat(whole).hasSize(1);
          assertThat(whole.getFirst().function().name()).isEqualTo("note");
        }
        assertSameCalls(whole, calls(streamed(p)));
      }
    }
  }

  @Test
  void aReplyThatIsNotACallStreamsAsContent() {
    ChatCompletionCreateParams p = request(2, b -> b.maxCompletionTokens(12));
    ChatCompletion whole = client.chat().completions().create(p);
    ChatCompletion acc = streamed(p);
    ChatCompletion.Choice c = acc.choices().getFirst();
    assertThat(c.message().toolCalls().orElse(List.<ChatCompletionMessageToolCall>of())).isEmpty();
    assertThat(c.message().content()).isEqualTo(whole.choices().getFirst().message().content());
    assertThat(c.message().content().orElseThrow()).isNotBlank();
    assertThat(c.finishReason()).isEqualTo(whole.choices().getFirst().finishReason());
  }

  @Test
  void contentThenACallComesAsContentThenToolCallDeltas() {
    for (long seed = 1; seed <= 2; seed++) {
      ChatCompletionCreateParams p =
          request(
              seed, b -> b.putAdditionalBodyProperty("regex", JsonValue.from(CONTENT_THEN_CALL)));
      ChatCompletion.Choice whole = client.chat().completions().create(p).choices().getFirst();
      assertThat(whole.finishReason()).isEqualTo(ChatCompletion.Choice.FinishReason.TOOL_CALLS);
      String content = whole.message().content().orElseThrow();
      assertThat(content).matches("[A-Z][a-z]{2,8}\\. ");
      List<ChatCompletionMessageFunctionToolCall> calls =
          whole.message().toolCalls().orElseThrow().stream()
              .map(t -> t.function().orElseThrow())
              .toList();
      assertThat(calls).extracting(c -> c.function().name()).containsExactly("add");

      ChatCompletionAccumulator acc = ChatCompletionAccumulator.create();
      boolean callSeen = false;
      try (StreamResponse<ChatCompletionChunk> stream =
          client.chat().completions().createStreaming(p)) {
        for (ChatCompletionChunk chunk :
            (Iterable<ChatCompletionChunk>) stream.stream()::iterator) {
          acc.accumulate(chunk);
          for (ChatCompletionChunk.Choice c : chunk.choices()) {
            boolean text = c.delta().content().filter(t -> !t.isEmpty()).isPresent();
            assertThat(text && callSeen).as("content after a tool-call delta").isFalse();
            callSeen |= c.delta().toolCalls().filter(t -> !t.isEmpty()).isPresent();
          }
        }
      }
      ChatCompletion.Choice streamed = acc.chatCompletion().choices().getFirst();
      assertThat(callSeen).isTrue();
      assertThat(streamed.finishReason()).isEqualTo(ChatCompletion.Choice.FinishReason.TOOL_CALLS);
      assertThat(streamed.message().content()).contains(content);
      assertSameCalls(
          calls,
          streamed.message().toolCalls().orElseThrow().stream()
              .map(t -> t.function().orElseThrow())
              .toList());
    }
  }
}
