package dev.ringmaster.server.openai;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ringmaster.engine.batch.FinishReason;
import dev.ringmaster.engine.batch.TokenEvent;
import dev.ringmaster.engine.constraint.OutputConstraint;
import dev.ringmaster.model.tokenizer.ChatTemplate;
import dev.ringmaster.server.ServerContext;
import dev.ringmaster.server.api.ApiException;
import dev.ringmaster.server.api.Fields;
import dev.ringmaster.server.api.Json;
import dev.ringmaster.server.generation.ChoiceEvent;
import dev.ringmaster.server.generation.ChoiceResult;
import dev.ringmaster.server.generation.Generation;
import dev.ringmaster.server.http.Endpoint;
import dev.ringmaster.server.http.Exchange;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * {@code POST /v1/chat/completions}: messages (and tools, {@link ChatPrompt}) are rendered with the
 * model's chat template (from tokenizer_config.json) and generation continues from the assistant
 * prompt. A reply that is tool calls ({@link ToolRequest}) is returned as {@code tool_calls}.
 */
public final class ChatCompletionsEndpoint implements Endpoint {
  private final ServerContext ctx;

  /** The endpoint over a server context. */
  public ChatCompletionsEndpoint(ServerContext ctx) {
    this.ctx = ctx;
  }

  @Override
  public void handle(Exchange ex) throws Exception {
    ObjectNode body = ex.json();
    int top = -1;
    if (Fields.bool(body, "logprobs", false)) {
      top = (int) Fields.integer(body, "top_logprobs", 0, 0, OpenAiParams.MAX_TOP_LOGPROBS);
    } else if (Fields.has(body, "top_logprobs")) {
      throw ApiException.invalid("top_logprobs", "'top_logprobs' requires 'logprobs': true");
    }
    OpenAiParams params =
        OpenAiParams.parse(body, ctx.model(), ctx.config().maxChoices(), top, true);
    ToolRequest tools = ToolRequest.parse(body, hasDeepSeekToolTokens());
    OutputConstraint forced = tools.constraint(ctx.model().constraints());
    if (forced != null) {
      if (params.constraint() != null) {
        throw ApiException.invalid(
            "tool_choice",
            "a required or named 'tool_choice' constrains the output itself; it cannot be combined"
                + " with another output constraint such as 'response_format'");
      }
      params = params.withConstraint(forced);
    }
    int[] prompt = render(body, tools);
    String id = Responses.newId("chatcmpl-");
    String model = ctx.model().name();
    List<ChoiceResult> results;
    try (Generation g =
        ctx.start(
            params.choices(prompt, 0, Integer.MAX_VALUE, ctx.model(), "messages"),
            id,
            ex.receivedNanos())) {
      if (params.stream()) {
        StreamRelay.relay(
            g, ex.sse(), new Format(tools), id, model, prompt.length, 1, params.includeUsage());
        return;
      }
      results = g.collect(ex::clientGone);
    }
    ObjectNode out =
        Responses.head(id, "chat.completion", System.currentTimeMillis() / 1000, model);
    ArrayNode arr = out.putArray("choices");
    int completion = 0;
    for (int i = 0; i < results.size(); i++) {
      ChoiceResult r = results.get(i);
      ObjectNode c = arr.addObject();
      c.put("index", i);
      ObjectNode msg = c.putObject("message");
      msg.put("role", "assistant");
      boolean called = putReply(msg, r.text(), tools, r.done().reason() == FinishReason.STOP);
      msg.putNull("refusal");
      if (params.topLogprobs() >= 0) {
        c.set(
            "logprobs",
            Responses.chatLogprobs(ctx.model().tokenizer(), CompletionsEndpoint.visibleTokens(r)));
      } else {
        c.putNull("logprobs");
      }
      c.put("finish_reason", called ? "tool_calls" : r.done().finishReason());
      Responses.matchedStop(c, r.done());
      completion += r.done().completionTokens();
    }
    int[] cached = results.stream().mapToInt(r -> r.done().cachedTokens()).toArray();
    out.set("usage", Responses.usage(prompt.length, completion, Responses.cachedTokens(cached, 1)));
    ex.ok(out);
  }

  private int[] render(ObjectNode body, ToolRequest tools) {
    ChatTemplate template =
        ctx.model()
            .tokenizer()
            .chatTemplate()
            .orElseThrow(
                () ->
                    ApiException.invalid(
                        "messages",
                        "this model has no chat template (tokenizer_config.json has no"
                            + " chat_template); use /v1/completions"));
    String text = ChatPrompt.render(body, template, tools);
    if (text.isEmpty()) {
      throw ApiException.invalid("messages", "the rendered prompt is empty");
    }
    // The template spells out its special tokens, so the tokenizer must not add them again.
    return ctx.model().tokenizer().encode(text, false);
  }

  /** Whether the tokenizer has every token of DeepSeek-V3's tool-call syntax. */
  private boolean hasDeepSeekToolTokens() {
    var tok = ctx.model().tokenizer();
    return List.of(
            ToolCallScanner.DS_CALLS_BEGIN,
            ToolCallScanner.DS_CALLS_END,
            ToolCallScanner.DS_CALL_BEGIN,
            ToolCallScanner.DS_CALL_END,
            ToolCallScanner.DS_SEP)
        .stream()
        .allMatch(t -> tok.tokenToId(t).isPresent());
  }

  /**
   * Puts a finished reply into {@code msg}: tool calls (and the content before them, if any) when
   * the tools allow them and the text is calls, else the text as content.
   *
   * @return whether it was tool calls
   */
  private static boolean putReply(ObjectNode msg, String text, ToolRequest tools, boolean done) {
    Optional<ToolRequest.Reply> reply = done ? tools.parseReply(text) : Optional.empty();
    if (reply.isEmpty()) {
      msg.put("content", text);
      return false;
    }
    if (reply.get().content().isEmpty()) {
      msg.putNull("content");
    } else {
      msg.put("content", reply.get().content());
    }
    ArrayNode out = msg.putArray("tool_calls");
    for (ToolRequest.Call c : reply.get().calls()) {
      out.add(ToolRequest.toolCallJson(c, Responses.newId("call_")));
    }
    return true;
  }

  /**
   * Chat chunks. With tools in play a choice's text goes through a {@link ToolCallStream}: held
   * while it may become calls, then streamed as call deltas or as content.
   */
  private final class Format implements ChoiceFormat {
    private final ToolRequest tools;
    private final Map<Integer, ToolCallStream> streams = new HashMap<>();

    Format(ToolRequest tools) {
      this.tools = tools;
    }

    @Override
    public String chunkObject() {
      return "chat.completion.chunk";
    }

    @Override
    public List<ObjectNode> delta(int index, String text, List<TokenEvent> tokens, boolean first) {
      if (tools.active()) {
        List<ObjectNode> out = new ArrayList<>();
        if (first) {
          out.add(choice(index, Json.object().put("role", "assistant").putNull("content")));
        }
        ToolCallStream stream =
            streams.computeIfAbsent(index, i -> new ToolCallStream(tools.scanner()));
        for (ObjectNode d : stream.append(text)) {
          out.add(choice(index, d));
        }
        return out;
      }
      ObjectNode d = Json.object();
      if (first) {
        d.put("role", "assistant");
      }
      d.put("content", text);
      ObjectNode c = choice(index, d);
      if (!tokens.isEmpty() && !Float.isNaN(tokens.getFirst().logprob())) {
        c.set("logprobs", Responses.chatLogprobs(ctx.model().tokenizer(), tokens));
      }
      return List.of(c);
    }

    @Override
    public List<ObjectNode> held(ChoiceEvent.Done done) {
      ToolCallStream stream = streams.get(done.index());
      if (stream == null) {
        return List.of();
      }
      return stream.finish().stream().map(d -> choice(done.index(), d)).toList();
    }

    @Override
    public ObjectNode finish(ChoiceEvent.Done done) {
      ToolCallStream stream = streams.remove(done.index());
      boolean called =
          stream != null && done.reason() == FinishReason.STOP && stream.completeCalls();
      ObjectNode c = choice(done.index(), Json.object());
      c.put("finish_reason", called ? "tool_calls" : done.finishReason());
      Responses.matchedStop(c, done);
      return c;
    }

    /** A streamed choice: its index, delta, null logprobs and finish reason. */
    private static ObjectNode choice(int index, ObjectNode delta) {
      ObjectNode c = Json.object();
      c.put("index", index);
      c.set("delta", delta);
      c.putNull("logprobs");
      c.putNull("finish_reason");
      return c;
    }
  }
}
