package dev.ringmaster.server.nativeapi;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ringmaster.engine.SamplingParams;
import dev.ringmaster.engine.batch.FinishReason;
import dev.ringmaster.engine.batch.TokenEvent;
import dev.ringmaster.engine.constraint.OutputConstraint;
import dev.ringmaster.server.ServerContext;
import dev.ringmaster.server.api.ApiException;
import dev.ringmaster.server.api.ConstraintFields;
import dev.ringmaster.server.api.Fields;
import dev.ringmaster.server.api.Json;
import dev.ringmaster.server.api.SamplingFields;
import dev.ringmaster.server.generation.ChoiceEvent;
import dev.ringmaster.server.generation.ChoiceRequest;
import dev.ringmaster.server.generation.ChoiceResult;
import dev.ringmaster.server.generation.Generation;
import dev.ringmaster.server.http.Endpoint;
import dev.ringmaster.server.http.Exchange;
import dev.ringmaster.server.http.SseStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;

/**
 * {@code POST /generate}: {@code text} or {@code input_ids} (one prompt or a batch) with {@code
 * sampling_params}; returns {@code text}, {@code output_ids} and {@code meta_info}, or a list of
 * them for a batch or {@code n > 1}. Streamed events carry the text so far (cumulative) and the
 * output ids so far, as SGLang's do, one event per token: also a token whose text is held back (an
 * incomplete UTF-8 character, a possible stop string) gets its event, with the text unchanged, so a
 * client sees the first token when it is made.
 */
public final class GenerateEndpoint implements Endpoint {
  private static final int DEFAULT_MAX_NEW_TOKENS = 128;
  private static final int MAX_PROMPTS = 64;
  private static final Set<String> SAMPLING_FIELDS =
      Set.of(
          "max_new_tokens",
          "temperature",
          "top_p",
          "top_k",
          "min_p",
          "stop",
          "stop_token_ids",
          "ignore_eos",
          "n",
          "seed",
          "sampling_seed",
          "skip_special_tokens",
          "spaces_between_special_tokens",
          "min_new_tokens",
          "frequency_penalty",
          "presence_penalty",
          "repetition_penalty",
          "logit_bias",
          "regex",
          "json_schema",
          "choice",
          "ebnf",
          "structural_tag");

  private final ServerContext ctx;

  /** The endpoint over a server context. */
  public GenerateEndpoint(ServerContext ctx) {
    this.ctx = ctx;
  }

  @Override
  public void handle(Exchange ex) throws Exception {
    ObjectNode body = ex.json();
    boolean batch = isBatch(body);
    List<int[]> prompts = prompts(body);
    ObjectNode sp = Fields.object(body, "sampling_params");
    if (sp == null) {
      sp = Json.object();
    }
    Fields.onlyKnown(sp, "sampling_params", SAMPLING_FIELDS);
    rejectUnsupported(sp);
    int n = (int) Fields.integer(sp, "n", 1, 1, ctx.config().maxChoices());
    boolean returnLogprob = Fields.bool(body, "return_logprob", false);
    int top = returnLogprob ? (int) Fields.integer(body, "top_logprobs_num", 0, 0, 20) : -1;
    List<ChoiceRequest> choices = new ArrayList<>();
    for (int[] p : prompts) {
      choices.addAll(choices(sp, p, choices.size(), n, top));
    }
    String rid = Fields.string(body, "rid", "gen-" + UUID.randomUUID().toString().replace("-", ""));
    boolean listOut = batch || n > 1;
    List<ChoiceResult> results;
    try (Generation g = ctx.start(choices, rid, ex.receivedNanos())) {
      if (Fields.bool(body, "stream", false)) {
        stream(g, ex.sse(), prompts, n, rid, returnLogprob);
        return;
      }
      results = g.collect(ex::clientGone);
    }
    ArrayNode arr = Json.MAPPER.createArrayNode();
    for (int i = 0; i < results.size(); i++) {
      ChoiceResult r = results.get(i);
      arr.add(result(r.text(), r.tokens(), r.done(), rid, i, returnLogprob));
    }
    ex.ok(listOut ? arr : arr.get(0));
  }

  private static boolean isBatch(ObjectNode body) {
    JsonNode text = body.get("text");
    JsonNode ids = body.get("input_ids");
    return (text != null && text.isArray())
        || (ids != null && ids.isArray() && !ids.isEmpty() && ids.get(0).isArray());
  }

  private List<int[]> prompts(ObjectNode body) {
    boolean hasText = Fields.has(body, "text");
    boolean hasIds = Fields.has(body, "input_ids");
    if (hasText == hasIds) {
      throw ApiException.invalid("text", "give exactly one of 'text' and 'input_ids'");
    }
    List<int[]> out = new ArrayList<>();
    int vocab = ctx.model().vocabSize();
    if (hasText) {
      JsonNode t = body.get("text");
      List<JsonNode> items = new ArrayList<>();
      if (t.isArray()) {
        t.forEach(items::add);
      } else {
        items.add(t);
      }
      checkCount("text", items.size());
      for (JsonNode e : items) {
        if (!e.isTextual()) {
          throw ApiException.invalid("text", "'text' must be a string or a list of strings");
        }
        if (e.textValue().isEmpty()) {
          throw ApiException.invalid("text", "the prompt is empty");
        }
        out.add(ctx.model().tokenizer().encode(Fields.checkText("text", e.textValue())));
      }
    } else {
      JsonNode ids = body.get("input_ids");
      if (ids.isArray() && !ids.isEmpty() && ids.get(0).isArray()) {
        checkCount("input_ids", ids.size());
        for (JsonNode e : ids) {
          out.add(Fields.tokenIds("input_ids", e, vocab));
        }
      } else {
        out.add(Fields.tokenIds("input_ids", ids, vocab));
      }
    }
    return out;
  }

  private static void checkCount(String param, int n) {
    if (n == 0) {
      throw ApiException.invalid(param, "'" + param + "' is an empty list");
    }
    if (n > MAX_PROMPTS) {
      throw ApiException.invalid(param, "at most " + MAX_PROMPTS + " prompts per request");
    }
  }

  private static void rejectUnsupported(ObjectNode sp) {
    if (Fields.integer(sp, "min_new_tokens", 0, 0, Integer.MAX_VALUE) != 0) {
      throw ApiException.unsupported(
          "sampling_params.min_new_tokens", "'min_new_tokens' is not supported");
    }
    if (!Fields.bool(sp, "skip_special_tokens", true)) {
      throw ApiException.unsupported(
          "sampling_params.skip_special_tokens", "only skip_special_tokens=true is supported");
    }
    Fields.bool(sp, "spaces_between_special_tokens", true);
  }

  private List<ChoiceRequest> choices(ObjectNode sp, int[] prompt, int first, int n, int top) {
    int limit = ctx.model().maxSequenceLength();
    if (prompt.length == 0) {
      throw ApiException.invalid("input_ids", "the prompt is empty");
    }
    if (prompt.length >= limit) {
      throw ApiException.contextExceeded(
          "text",
          "the prompt has " + prompt.length + " tokens; the maximum sequence length is " + limit);
    }
    int room = limit - prompt.length;
    int max;
    if (Fields.has(sp, "max_new_tokens")) {
      max = (int) Fields.integer(sp, "max_new_tokens", 0, 1, Integer.MAX_VALUE);
      if (max > room) {
        throw ApiException.contextExceeded(
            "sampling_params.max_new_tokens",
            "max_new_tokens is " + max + " but only " + room + " new tokens fit after the prompt");
      }
    } else {
      max = Math.min(DEFAULT_MAX_NEW_TOKENS, room);
    }
    double temperature = Fields.number(sp, "temperature", 1.0, 0, 100);
    double topP = Fields.number(sp, "top_p", 1.0, 0, 1);
    if (topP == 0) {
      throw ApiException.invalid("sampling_params.top_p", "'top_p' must be greater than 0");
    }
    int topK = (int) Fields.integer(sp, "top_k", -1, -1, Integer.MAX_VALUE);
    long seed =
        Fields.has(sp, "seed")
            ? Fields.integer(sp, "seed", 0, Long.MIN_VALUE, Long.MAX_VALUE)
            : Fields.has(sp, "sampling_seed")
                ? Fields.integer(sp, "sampling_seed", 0, Long.MIN_VALUE, Long.MAX_VALUE)
                : ThreadLocalRandom.current().nextLong();
    List<String> stops = new ArrayList<>();
    List<Integer> stopIds = new ArrayList<>();
    Fields.stops(sp, "stop", 16, ctx.model().vocabSize(), stops, stopIds);
    if (Fields.has(sp, "stop_token_ids")) {
      for (int id :
          Fields.tokenIds("stop_token_ids", sp.get("stop_token_ids"), ctx.model().vocabSize())) {
        stopIds.add(id);
      }
    }
    boolean ignoreEos = Fields.bool(sp, "ignore_eos", false);
    OutputConstraint constraint = ConstraintFields.sglang(sp, ctx.model().constraints());
    List<ChoiceRequest> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      SamplingParams p =
          SamplingFields.apply(
              sp,
              "sampling_params.",
              new SamplingParams(
                  temperature, topP, Math.max(topK, 0), seed + i, max, ignoreEos, stopIds),
              ctx.model().vocabSize());
      out.add(new ChoiceRequest(first + i, prompt, p, stops, top, constraint));
    }
    return out;
  }

  private void stream(
      Generation g, SseStream sse, List<int[]> prompts, int n, String rid, boolean logprobs)
      throws InterruptedException {
    int count = g.choices();
    StringBuilder[] text = new StringBuilder[count];
    List<List<TokenEvent>> tokens = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      text[i] = new StringBuilder();
      tokens.add(new ArrayList<>());
    }
    try {
      for (ChoiceEvent e; (e = g.next()) != null; ) {
        int i = e.index();
        switch (e) {
          case ChoiceEvent.Delta d -> {
            text[i].append(d.text());
            if (d.token() != null) {
              tokens.get(i).add(d.token());
            }
            if (d.hidden() || d.token() == null) {
              continue; // a stop token or the text held back to the end: the final event follows
            }
            ChoiceEvent.Done pending =
                new ChoiceEvent.Done(
                    i, null, null, prompts.get(i / n).length, tokens.get(i).size(), 0, null, 0, 0);
            sse.send(result(text[i].toString(), tokens.get(i), pending, rid, i, logprobs));
            g.sent(i);
          }
          case ChoiceEvent.Done d -> {
            if (d.reason() == FinishReason.ERROR) {
              sse.send(Json.error(Generation.internalError(d)));
              continue;
            }
            if (!sse.started() && g.abortedByShutdown(d)) {
              throw Generation.shutdownAbort(); // nothing sent yet: a retryable 503
            }
            sse.send(result(text[i].toString(), tokens.get(i), d, rid, i, logprobs));
          }
        }
      }
      sse.done();
    } finally {
      g.close();
    }
  }

  private static ObjectNode result(
      String text, List<TokenEvent> tokens, ChoiceEvent.Done d, String rid, int index, boolean lp) {
    ObjectNode o = Json.object();
    o.put("text", text);
    ArrayNode ids = o.putArray("output_ids");
    tokens.forEach(t -> ids.add(t.token()));
    o.put("index", index);
    ObjectNode meta = o.putObject("meta_info");
    meta.put("id", rid + (index > 0 ? "-" + index : ""));
    meta.put("prompt_tokens", d.promptTokens());
    meta.put("cached_tokens", d.cachedTokens());
    meta.put("completion_tokens", d.completionTokens());
    if (d.reason() == null) {
      meta.putNull("finish_reason");
    } else {
      ObjectNode fr = meta.putObject("finish_reason");
      fr.put("type", d.finishReason());
      switch (d.matchedStop()) {
        case String s -> fr.put("matched", s);
        case Integer t -> fr.put("matched", t);
        case null, default -> {
          if (d.reason() == FinishReason.LENGTH) {
            fr.put("length", d.completionTokens());
          }
        }
      }
      meta.put("e2e_latency", d.e2eSeconds());
      if (!Double.isNaN(d.ttftSeconds())) {
        meta.put("ttft", d.ttftSeconds());
      }
    }
    if (lp) {
      ArrayNode out = meta.putArray("output_token_logprobs");
      for (TokenEvent t : tokens) {
        out.addArray().add(t.logprob()).add(t.token()).addNull();
      }
    }
    return o;
  }
}
