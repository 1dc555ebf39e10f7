package dev.ringmaster.server.openai;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ringmaster.engine.batch.TokenEvent;
import dev.ringmaster.server.ServerContext;
import dev.ringmaster.server.api.ApiException;
import dev.ringmaster.server.api.Fields;
import dev.ringmaster.server.api.Json;
import dev.ringmaster.server.generation.ChoiceEvent;
import dev.ringmaster.server.generation.ChoiceRequest;
import dev.ringmaster.server.generation.ChoiceResult;
import dev.ringmaster.server.generation.Generation;
import dev.ringmaster.server.http.Endpoint;
import dev.ringmaster.server.http.Exchange;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code POST /v1/completions}: the prompt is a text, a list of texts, a list of token ids or a
 * list of such lists; each prompt gets {@code n} choices, indexed prompt by prompt.
 */
public final class CompletionsEndpoint implements Endpoint {
  /** OpenAI's default output limit for completions. */
  static final int DEFAULT_MAX_TOKENS = 16;

  private static final int MAX_PROMPTS = 64;
  private final ServerContext ctx;

  /** The endpoint over a server context. */
  public CompletionsEndpoint(ServerContext ctx) {
    this.ctx = ctx;
  }

  @Override
  public void handle(Exchange ex) throws Exception {
    ObjectNode body = ex.json();
    if (Fields.bool(body, "echo", false)) {
      throw ApiException.unsupported("echo", "'echo' is not supported");
    }
    int top = (int) Fields.integer(body, "logprobs", -1, 0, OpenAiParams.MAX_TOP_LOGPROBS);
    OpenAiParams params =
        OpenAiParams.parse(body, ctx.model(), ctx.config().maxChoices(), top, false);
    List<int[]> prompts = prompts(body);
    List<ChoiceRequest> choices = new ArrayList<>();
    int promptTokens = 0;
    for (int[] p : prompts) {
      choices.addAll(params.choices(p, choices.size(), DEFAULT_MAX_TOKENS, ctx.model(), "prompt"));
      promptTokens += p.length;
    }
    String id = Responses.newId("cmpl-");
    String model = ctx.model().name();
    List<ChoiceResult> results;
    try (Generation g = ctx.start(choices, id, ex.receivedNanos())) {
      if (params.stream()) {
        StreamRelay.relay(
            g,
            ex.sse(),
            new Format(),
            id,
            model,
            promptTokens,
            prompts.size(),
            params.includeUsage());
        return;
      }
      results = g.collect(ex::clientGone);
    }
    ObjectNode out =
        Responses.head(id, "text_completion", System.currentTimeMillis() / 1000, model);
    ArrayNode arr = out.putArray("choices");
    int completion = 0;
    for (int i = 0; i < results.size(); i++) {
      ChoiceResult r = results.get(i);
      ObjectNode c = arr.addObject();
      c.put("index", i);
      c.put("text", r.text());
      if (params.topLogprobs() >= 0) {
        c.set(
            "logprobs", Responses.completionLogprobs(ctx.model().tokenizer(), visibleTokens(r), 0));
      } else {
        c.putNull("logprobs");
      }
      c.put("finish_reason", r.done().finishReason());
      Responses.matchedStop(c, r.done());
      completion += r.done().completionTokens();
    }
    int[] cached = results.stream().mapToInt(r -> r.done().cachedTokens()).toArray();
    out.set(
        "usage",
        Responses.usage(promptTokens, completion, Responses.cachedTokens(cached, prompts.size())));
    ex.ok(out);
  }

  static List<TokenEvent> visibleTokens(ChoiceResult r) {
    List<TokenEvent> out = new ArrayList<>();
    for (int i = 0; i < r.tokens().size(); i++) {
      if (r.visible().get(i)) {
        out.add(r.tokens().get(i));
      }
    }
    return out;
  }

  private List<int[]> prompts(ObjectNode body) {
    JsonNode p = body.get("prompt");
    if (p == null || p.isNull()) {
      throw ApiException.invalid("prompt", "'prompt' is required");
    }
    int vocab = ctx.model().vocabSize();
    List<int[]> out = new ArrayList<>();
    if (p.isTextual()) {
      out.add(encode(p.textValue()));
    } else if (p.isArray()) {
      if (p.isEmpty()) {
        throw ApiException.invalid("prompt", "'prompt' is an empty list");
      }
      JsonNode first = p.get(0);
      if (first.isIntegralNumber()) {
        // A flat list of ints is one prompt, however long; only lists of prompts are counted.
        out.add(Fields.tokenIds("prompt", p, vocab));
      } else {
        if (p.size() > MAX_PROMPTS) {
          throw ApiException.invalid(
              "prompt", "at most " + MAX_PROMPTS + " prompts per request, got " + p.size());
        }
        for (JsonNode e : p) {
          if (e.isTextual()) {
            out.add(encode(e.textValue()));
          } else if (e.isArray()) {
            out.add(Fields.tokenIds("prompt", e, vocab));
          } else {
            throw ApiException.invalid(
                "prompt", "'prompt' must be a string, a list of strings, or token id list(s)");
          }
        }
      }
    } else {
      throw ApiException.invalid(
          "prompt", "'prompt' must be a string, a list of strings, or token id list(s)");
    }
    return out;
  }

  private int[] encode(String text) {
    Fields.checkText("prompt", text);
    if (text.isEmpty()) {
      throw ApiException.invalid("prompt", "the prompt is empty");
    }
    return ctx.model().tokenizer().encode(text);
  }

  private final class Format implements ChoiceFormat {
    private final Map<Integer, Integer> offsets = new HashMap<>();

    @Override
    public String chunkObject() {
      return "text_completion";
    }

    @Override
    public List<ObjectNode> delta(int index, String text, List<TokenEvent> tokens, boolean first) {
      ObjectNode c = Json.object();
      c.put("index", index);
      c.put("text", text);
      if (!tokens.isEmpty() && !Float.isNaN(tokens.getFirst().logprob())) {
        int offset = offsets.getOrDefault(index, 0);
        c.set("logprobs", Responses.completionLogprobs(ctx.model().tokenizer(), tokens, offset));
        offsets.put(index, offset + text.length());
      } else {
        c.putNull("logprobs");
      }
      c.putNull("finish_reason");
      return List.of(c);
    }

    @Override
    public ObjectNode finish(ChoiceEvent.Done done) {
      ObjectNode c = Json.object();
      c.put("index", done.index());
      c.put("text", "");
      c.putNull("logprobs");
      c.put("finish_reason", done.finishReason());
      Responses.matchedStop(c, done);
      return c;
    }
  }
}
