package dev.ringmaster.server.nativeapi;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ringmaster.server.ServerContext;
import dev.ringmaster.server.api.ApiException;
import dev.ringmaster.server.api.Fields;
import dev.ringmaster.server.api.Json;
import dev.ringmaster.server.http.Endpoint;
import dev.ringmaster.server.http.Exchange;

/** {@code POST /tokenize} and {@code POST /detokenize}. */
public final class TokenizeEndpoints {
  private final ServerContext ctx;

  /** The endpoints over a server context. */
  public TokenizeEndpoints(ServerContext ctx) {
    this.ctx = ctx;
  }

  /**
   * {@code /tokenize}: {@code text} (or {@code prompt}), a string or a list of strings, and {@code
   * add_special_tokens} (default true) give {@code tokens}, {@code count} and {@code
   * max_model_len}.
   */
  public Endpoint tokenize() {
    return ex -> {
      ObjectNode body = ex.json();
      String field = Fields.has(body, "text") ? "text" : "prompt";
      JsonNode in = body.get(field);
      if (in == null || in.isNull()) {
        throw ApiException.invalid("text", "'text' is required");
      }
      boolean special = Fields.bool(body, "add_special_tokens", true);
      ObjectNode out = Json.object();
      if (in.isTextual()) {
        int[] ids = encode(field, in.textValue(), special);
        ArrayNode a = out.putArray("tokens");
        for (int id : ids) {
          a.add(id);
        }
        out.put("count", ids.length);
      } else if (in.isArray()) {
        ArrayNode all = out.putArray("tokens");
        ArrayNode counts = out.putArray("count");
        for (JsonNode e : in) {
          if (!e.isTextual()) {
            throw ApiException.invalid(field, "'" + field + "' must be a string or strings");
          }
          int[] ids = encode(field, e.textValue(), special);
          ArrayNode a = all.addArray();
          for (int id : ids) {
            a.add(id);
          }
          counts.add(ids.length);
        }
      } else {
        throw ApiException.invalid(field, "'" + field + "' must be a string or strings");
      }
      out.put("max_model_len", ctx.model().maxSequenceLength());
      ex.ok(out);
    };
  }

  private int[] encode(String field, String text, boolean special) {
    return ctx.model().tokenizer().encode(Fields.checkText(field, text), special);
  }

  /** {@code /detokenize}: {@code tokens} and {@code skip_special_tokens} give {@code text}. */
  public Endpoint detokenize() {
    return (Exchange ex) -> {
      ObjectNode body = ex.json();
      JsonNode in = body.get("tokens");
      if (in == null || in.isNull()) {
        throw ApiException.invalid("tokens", "'tokens' is required");
      }
      int[] ids = Fields.tokenIds("tokens", in, ctx.model().vocabSize());
      boolean skip = Fields.bool(body, "skip_special_tokens", true);
      ObjectNode out = Json.object();
      out.put("text", ctx.model().tokenizer().decode(ids, skip));
      ex.ok(out);
    };
  }
}
