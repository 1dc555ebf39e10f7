package dev.ringmaster.server.nativeapi;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ringmaster.server.ServerContext;
import dev.ringmaster.server.ServerVersion;
import dev.ringmaster.server.api.ApiException;
import dev.ringmaster.server.api.Fields;
import dev.ringmaster.server.api.Json;
import dev.ringmaster.server.http.Endpoint;

/**
 * SGLang's small native endpoints: {@code GET /get_model_info}, {@code GET /version}, {@code POST
 * /abort_request} and {@code POST /flush_cache}.
 */
public final class SglangEndpoints {
  private final ServerContext ctx;

  /** The endpoints over a server context. */
  public SglangEndpoints(ServerContext ctx) {
    this.ctx = ctx;
  }

  /** The model: path, tokenizer path, whether it generates, its type and architectures. */
  public Endpoint modelInfo() {
    return ex -> {
      var cfg = ctx.model().engine().model().config();
      ObjectNode out = Json.object();
      out.put("model_path", ctx.model().path());
      out.put("tokenizer_path", ctx.model().path());
      out.put("served_model_name", ctx.model().name());
      out.put("is_generation", true);
      out.putNull("preferred_sampling_params");
      out.put("weight_version", "default");
      out.put("has_image_understanding", false);
      out.put("has_audio_understanding", false);
      out.put("model_type", cfg.architecture().modelType());
      out.put("max_model_len", ctx.model().maxSequenceLength());
      ex.ok(out);
    };
  }

  /** {@code {"version": "..."}}. */
  public Endpoint version() {
    return ex -> {
      ObjectNode out = Json.object();
      out.put("version", ServerVersion.VERSION);
      ex.ok(out);
    };
  }

  /**
   * Evicts every prefix-cache page no running request uses, so their KV blocks go back to the pool;
   * pages running requests use stay (they go once those requests end). Answers {@code
   * flushed_pages} and the {@code cached_pages} left.
   */
  public Endpoint flushCache() {
    return ex -> {
      var engine = ctx.model().engine();
      int flushed;
      try {
        flushed = engine.flushCache().get(30, java.util.concurrent.TimeUnit.SECONDS);
      } catch (java.util.concurrent.TimeoutException | java.util.concurrent.ExecutionException e) {
        throw new IllegalStateException("the engine did not flush its prefix cache", e);
      }
      ObjectNode out = Json.object();
      out.put("radix_cache", engine.stats().radixCache());
      out.put("flushed_pages", flushed);
      out.put("cached_pages", engine.stats().cachedPages());
      ex.ok(out);
    };
  }

  /**
   * Aborts the request whose id is {@code rid} ({@code rid} of {@code /generate}, the response id
   * of the OpenAI endpoints), or every request with {@code "abort_all": true}. It ends with finish
   * reason {@code abort}; an id that is not running is not an error (it may just have finished).
   */
  public Endpoint abortRequest() {
    return ex -> {
      ObjectNode body = ex.json();
      boolean all = Fields.bool(body, "abort_all", false);
      String rid = Fields.string(body, "rid", null);
      if (!all && (rid == null || rid.isEmpty())) {
        throw ApiException.invalid("rid", "give 'rid' (the request id) or 'abort_all': true");
      }
      int aborted = all ? ctx.requests().abortAll() : ctx.requests().abort(rid) ? 1 : 0;
      ObjectNode out = Json.object();
      out.put("aborted", aborted);
      ex.ok(out);
    };
  }
}
