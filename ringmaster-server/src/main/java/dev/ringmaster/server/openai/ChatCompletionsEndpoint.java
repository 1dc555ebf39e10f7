package dev.ringmaster.server.openai;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ringmaster.engine.batch.TokenEvent;
import dev.ringmaster.model.tokenizer.ChatMessage;
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
import java.util.List;
import java.util.Set;

/**
 * {@code POST /v1/chat/completions}: messages are rendered with the model's chat template (from
 * tokenizer_config.json) and generation continues from the assistant prompt.
 */
public final class ChatCompletionsEndpoint implements Endpoint {
  private static final Set<String> ROLES =
      Set.of("system", "developer", "user", "assistant", "tool");
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
    OpenAiParams params = OpenAiParams.parse(body, ctx.model(), ctx.config().maxChoices(), top);
    int[] prompt = render(body);
    String id = Responses.newId("chatcmpl-");
    String model = ctx.model().name();
    List<ChoiceResult> results;
    try (Generation g =
        ctx.start(params.choices(prompt, 0, Integer.MAX_VALUE, ctx.model(), "messages"), id)) {
      if (params.stream()) {
        StreamRelay.relay(
            g, ex.sse(), new Format(), id, model, prompt.length, params.includeUsage());
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
      msg.put("content", r.text());
      msg.putNull("refusal");
      if (params.topLogprobs() >= 0) {
        c.set(
            "logprobs",
            Responses.chatLogprobs(ctx.model().tokenizer(), CompletionsEndpoint.visibleTokens(r)));
      } else {
        c.putNull("logprobs");
      }
      c.put("finish_reason", r.done().finishReason());
      Responses.matchedStop(c, r.done());
      completion += r.done().completionTokens();
    }
    out.set("usage", Responses.usage(prompt.length, completion));
    ex.ok(out);
  }

  private int[] render(ObjectNode body) {
    JsonNode msgs = body.get("messages");
    if (msgs == null || !msgs.isArray()) {
      throw ApiException.invalid("messages", "'messages' must be an array of messages");
    }
    if (msgs.isEmpty()) {
      throw ApiException.invalid("messages", "'messages' is empty");
    }
    List<ChatMessage> messages = new ArrayList<>();
    for (int i = 0; i < msgs.size(); i++) {
      messages.add(message(msgs.get(i), "messages[" + i + "]"));
    }
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
    String text;
    try {
      text = template.render(messages, true);
    } catch (RuntimeException e) {
      throw ApiException.invalid(
          "messages", "the chat template rejected the messages: " + e.getMessage());
    }
    if (text.isEmpty()) {
      throw ApiException.invalid("messages", "the rendered prompt is empty");
    }
    // The template spells out its special tokens, so the tokenizer must not add them again.
    return ctx.model().tokenizer().encode(text, false);
  }

  private static ChatMessage message(JsonNode m, String where) {
    if (!m.isObject()) {
      throw ApiException.invalid(where, where + " must be an object");
    }
    ObjectNode o = (ObjectNode) m;
    String role = Fields.string(o, "role", null);
    if (role == null || !ROLES.contains(role)) {
      throw ApiException.invalid(where + ".role", where + ".role must be one of " + ROLES);
    }
    JsonNode content = o.get("content");
    String text;
    if (content == null || content.isNull()) {
      text = "";
    } else if (content.isTextual()) {
      text = Fields.checkText(where + ".content", content.textValue());
    } else if (content.isArray()) {
      StringBuilder sb = new StringBuilder();
      for (JsonNode part : content) {
        if (!part.isObject() || !"text".equals(part.path("type").asText())) {
          throw ApiException.unsupported(
              where + ".content", "only text content parts are supported");
        }
        sb.append(Fields.string((ObjectNode) part, "text", ""));
      }
      text = sb.toString();
    } else {
      throw ApiException.invalid(where + ".content", where + ".content must be a string or parts");
    }
    return new ChatMessage(role, text);
  }

  private final class Format implements ChoiceFormat {
    @Override
    public String chunkObject() {
      return "chat.completion.chunk";
    }

    @Override
    public ObjectNode delta(int index, String text, List<TokenEvent> tokens, boolean first) {
      ObjectNode c = Json.object();
      c.put("index", index);
      ObjectNode d = c.putObject("delta");
      if (first) {
        d.put("role", "assistant");
      }
      d.put("content", text);
      if (!tokens.isEmpty() && !Float.isNaN(tokens.getFirst().logprob())) {
        c.set("logprobs", Responses.chatLogprobs(ctx.model().tokenizer(), tokens));
      } else {
        c.putNull("logprobs");
      }
      c.putNull("finish_reason");
      return c;
    }

    @Override
    public ObjectNode finish(ChoiceEvent.Done done) {
      ObjectNode c = Json.object();
      c.put("index", done.index());
      c.putObject("delta");
      c.putNull("logprobs");
      c.put("finish_reason", done.finishReason());
      Responses.matchedStop(c, done);
      return c;
    }
  }
}
