package dev.ringmaster.server.nativeapi;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ringmaster.engine.batch.BatchEngine;
import dev.ringmaster.engine.batch.EngineStats;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.server.ServerContext;
import dev.ringmaster.server.api.Json;
import dev.ringmaster.server.http.Endpoint;
import dev.ringmaster.server.http.Exchange;
import java.util.Map;

/**
 * {@code GET /get_server_info}: the model, the launch flags, the memory breakdown (weights, KV
 * cache, heap) and the KV cache's capacity and use.
 */
public final class ServerInfoEndpoint implements Endpoint {
  private final ServerContext ctx;

  /** The endpoint over a server context. */
  public ServerInfoEndpoint(ServerContext ctx) {
    this.ctx = ctx;
  }

  @Override
  public void handle(Exchange ex) {
    BatchEngine engine = ctx.model().engine();
    EngineStats s = engine.stats();
    ObjectNode out = Json.object();
    out.put("version", "ringmaster 0.1.0");
    out.put("model_path", ctx.model().path());
    out.put("served_model_name", ctx.model().name());
    out.put("model_type", engine.model().config().architecture().modelType());
    out.put("device", "cpu");
    ObjectNode flags = out.putObject("flags");
    for (Map.Entry<String, Object> f : ctx.config().flags().entrySet()) {
      flags.putPOJO(f.getKey(), f.getValue());
    }
    ObjectNode sched = out.putObject("scheduler");
    sched.put("max_running_requests", engine.config().maxRunningRequests());
    sched.put("max_queued_requests", engine.config().maxQueuedRequests());
    sched.put("chunked_prefill_size", engine.config().chunkedPrefillSize());
    sched.put("page_size", engine.config().pageSize());
    long bytesPerToken = KvCache.bytesPerToken(engine.model().config());
    long kvTokens = engine.pool().capacityTokens();
    ObjectNode mem = out.putObject("memory");
    mem.put("weights_bytes", engine.model().weightBytes());
    mem.put("kv_cache_bytes", bytesPerToken * kvTokens);
    mem.put("kv_bytes_per_token", bytesPerToken);
    Runtime rt = Runtime.getRuntime();
    mem.put("heap_max_bytes", rt.maxMemory());
    mem.put("heap_used_bytes", rt.totalMemory() - rt.freeMemory());
    ObjectNode kv = out.putObject("kv_cache");
    kv.put("max_total_num_tokens", kvTokens);
    kv.put("total_blocks", s.totalBlocks());
    kv.put("used_blocks", s.usedBlocks());
    kv.put("page_size", s.pageSize());
    kv.put("token_usage", s.kvUsage());
    out.put("max_model_len", ctx.model().maxSequenceLength());
    out.put("context_length", engine.model().config().maxPositionEmbeddings());
    ObjectNode load = out.putObject("load");
    load.put("num_running_reqs", s.running());
    load.put("num_queue_reqs", s.queued());
    load.put("steps", s.steps());
    load.put("preemptions", s.preemptions());
    ex.ok(out);
  }
}
