package dev.ringmaster.server.openai;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ringmaster.engine.batch.TokenEvent;
import dev.ringmaster.model.tokenizer.Tokenizer;
import dev.ringmaster.server.api.Json;
import dev.ringmaster.server.generation.ChoiceEvent;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.UUID;

/** Pieces of OpenAI response bodies shared by completions and chat. */
final class Responses {
  private Responses() {}

  /** A fresh response id with the given prefix. */
  static String newId(String prefix) {
    return prefix + UUID.randomUUID().toString().replace("-", "");
  }

  /**
   * The usage object; {@code prompt_tokens_details.cached_tokens} counts the prompt tokens the
   * prefix cache held, as OpenAI reports them.
   */
  static ObjectNode usage(int promptTokens, int completionTokens, int cachedTokens) {
    ObjectNode u = Json.object();
    u.put("prompt_tokens", promptTokens);
    u.put("completion_tokens", completionTokens);
    u.put("total_tokens", promptTokens + completionTokens);
    u.putObject("prompt_tokens_details").put("cached_tokens", cachedTokens);
    return u;
  }

  /**
   * Cached prompt tokens of a response: choices come {@code choices / prompts} per prompt, which is
   * counted once in {@code prompt_tokens}, so each prompt counts its best-cached choice.
   */
  static int cachedTokens(int[] perChoice, int prompts) {
    int per = Math.max(1, perChoice.length / Math.max(1, prompts));
    int total = 0;
    for (int start = 0; start < perChoice.length; start += per) {
      int best = 0;
      for (int i = start; i < Math.min(perChoice.length, start + per); i++) {
        best = Math.max(best, perChoice[i]);
      }
      total += best;
    }
    return total;
  }

  /** The head every response and chunk starts with. */
  static ObjectNode head(String id, String object, long created, String model) {
    ObjectNode o = Json.object();
    o.put("id", id);
    o.put("object", object);
    o.put("created", created);
    o.put("model", model);
    return o;
  }

  /** Puts {@code matched_stop} (SGLang's extension) when a stop string or token ended it. */
  static void matchedStop(ObjectNode choice, ChoiceEvent.Done d) {
    if (d.matchedStop() instanceof String s) {
      choice.put("matched_stop", s);
    } else if (d.matchedStop() instanceof Integer i) {
      choice.put("matched_stop", i);
    }
  }

  /** The legacy completions logprobs object for some tokens. */
  static ObjectNode completionLogprobs(Tokenizer tok, List<TokenEvent> tokens, int textOffset) {
    ObjectNode lp = Json.object();
    ArrayNode strs = lp.putArray("tokens");
    ArrayNode lps = lp.putArray("token_logprobs");
    ArrayNode tops = lp.putArray("top_logprobs");
    ArrayNode offsets = lp.putArray("text_offset");
    int offset = textOffset;
    for (TokenEvent t : tokens) {
      String s = tokenText(tok, t.token());
      strs.add(s);
      lps.add(t.logprob());
      offsets.add(offset);
      offset += s.length();
      ObjectNode top = tops.addObject();
      for (int i = 0; i < t.topIds().length; i++) {
        if (possible(t.topLogprobs()[i])) {
          top.put(tokenText(tok, t.topIds()[i]), t.topLogprobs()[i]);
        }
      }
    }
    return lp;
  }

  /** The chat logprobs object for some tokens. */
  static ObjectNode chatLogprobs(Tokenizer tok, List<TokenEvent> tokens) {
    ObjectNode lp = Json.object();
    ArrayNode content = lp.putArray("content");
    for (TokenEvent t : tokens) {
      ObjectNode c = entry(tok, t.token(), t.logprob());
      ArrayNode top = c.putArray("top_logprobs");
      for (int i = 0; i < t.topIds().length; i++) {
        if (possible(t.topLogprobs()[i])) {
          top.add(entry(tok, t.topIds()[i], t.topLogprobs()[i]));
        }
      }
      content.add(c);
    }
    return lp;
  }

  /**
   * Whether an alternative could have been sampled: a token an output constraint forbids has
   * log-probability -inf and is left out (JSON has no number for it), so a constrained step may
   * list fewer alternatives than asked for.
   */
  private static boolean possible(float logprob) {
    return logprob != Float.NEGATIVE_INFINITY && !Float.isNaN(logprob);
  }

  private static ObjectNode entry(Tokenizer tok, int id, float logprob) {
    ObjectNode e = Json.object();
    String s = tokenText(tok, id);
    e.put("token", s);
    e.put("logprob", logprob);
    ArrayNode bytes = e.putArray("bytes");
    for (byte b : s.getBytes(StandardCharsets.UTF_8)) {
      bytes.add(b & 0xff);
    }
    return e;
  }

  /** A token's text on its own (special tokens kept). */
  static String tokenText(Tokenizer tok, int id) {
    return tok.decode(new int[] {id}, false);
  }
}
