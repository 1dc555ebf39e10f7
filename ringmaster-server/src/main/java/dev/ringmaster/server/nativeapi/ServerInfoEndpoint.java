package dev.ringmaster.server.nativeapi;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ringmaster.engine.batch.BatchEngine;
import dev.ringmaster.engine.batch.EngineStats;
import dev.ringmaster.engine.batch.StepTimes;
import dev.ringmaster.engine.spec.SpeculationSnapshot;
import dev.ringmaster.server.ServerContext;
import dev.ringmaster.server.ServerVersion;
import dev.ringmaster.server.api.Json;
import dev.ringmaster.server.http.Endpoint;
import dev.ringmaster.server.http.Exchange;
import java.util.Map;

/**
 * {@code GET /get_server_info} and {@code /server_info}, in SGLang's shape: the launch flags at the
 * top level (as SGLang puts its server args there), {@code internal_states} (a list with one entry
 * per scheduler: {@code last_gen_throughput} and the like, which {@code sglang.bench_serving} reads
 * from its first entry), {@code version}; plus the model, the memory breakdown (weights, KV cache,
 * heap) and the KV cache's capacity and use.
 */
public final class ServerInfoEndpoint implements Endpoint {
  private final ServerContext ctx;

  /** The endpoint over a server context. */
  public ServerInfoEndpoint(ServerContext ctx) {
    this.ctx = ctx;
  }

  /** The speculation state: off, or the algorithm, the policy, its counters and averages. */
  private static ObjectNode speculative(BatchEngine engine) {
    ObjectNode o = Json.object();
    var snap = engine.speculation();
    o.put("enabled", snap.isPresent());
    if (snap.isEmpty()) {
      return o;
    }
    SpeculationSnapshot s = snap.get();
    o.put("algorithm", s.algorithm().name());
    o.put("policy", s.policy().name().toLowerCase(java.util.Locale.ROOT));
    o.put("num_draft_tokens", s.numDraftTokens());
    o.put("margin", s.margin());
    o.put("speculating_now", s.enabled());
    o.put("enabled_fraction", s.enabledFraction());
    o.put("decode_steps_decided", s.decisions());
    o.put("decode_steps_speculated", s.enabledDecisions());
    o.put("verified_drafts", s.verifyRows());
    o.put("draft_tokens", s.draftTokens());
    o.put("accepted_tokens", s.acceptedTokens());
    o.put("accept_length", s.acceptLength());
    var acc = o.putArray("acceptance_by_position");
    for (double a : s.acceptanceByPosition()) {
      acc.add(a);
    }
    o.put("draft_ns_per_token", s.draftNanosPerToken());
    return o;
  }

  @Override
  public void handle(Exchange ex) {
    BatchEngine engine = ctx.model().engine();
    EngineStats s = engine.stats();
    ObjectNode out = Json.object();
    for (Map.Entry<String, Object> f : ctx.config().flags().entrySet()) {
      out.putPOJO(f.getKey(), f.getValue());
    }
    out.put("version", ServerVersion.VERSION);
    out.put("model_path", ctx.model().path());
    out.put("tokenizer_path", ctx.model().path());
    out.put("served_model_name", ctx.model().name());
    out.put("model_type", engine.model().config().architecture().modelType());
    ObjectNode flags = out.putObject("flags");
    for (Map.Entry<String, Object> f : ctx.config().flags().entrySet()) {
      flags.putPOJO(f.getKey(), f.getValue());
    }
    ObjectNode sched = out.putObject("scheduler");
    sched.put("max_running_requests", engine.config().maxRunningRequests());
    sched.put("max_queued_requests", engine.config().maxQueuedRequests());
    sched.put("chunked_prefill_size", engine.config().chunkedPrefillSize());
    sched.put("page_size", engine.config().pageSize());
    long bytesPerToken = engine.model().kvBytesPerToken();
    long kvTokens = engine.pool().capacityTokens();
    out.put("max_total_num_tokens", kvTokens);
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
    ObjectNode radix = out.putObject("radix_cache");
    radix.put("enabled", s.radixCache());
    radix.put("schedule_policy", engine.config().schedulePolicy().flagName());
    radix.put("cached_pages", s.cachedPages());
    radix.put("cached_page_tokens", (long) s.cachedPages() * s.pageSize());
    radix.put("admitted_tokens", s.admittedTokens());
    radix.put("cached_tokens", s.cachedTokens());
    radix.put("cache_hit_rate", s.cacheHitRate());
    out.set("speculative", speculative(engine));
    out.put("max_model_len", ctx.model().maxSequenceLength());
    out.put("context_length", engine.model().config().maxPositionEmbeddings());
    ObjectNode load = out.putObject("load");
    load.put("num_running_reqs", s.running());
    load.put("num_queue_reqs", s.queued());
    load.put("steps", s.steps());
    load.put("preemptions", s.preemptions());
    ObjectNode state = out.putArray("internal_states").addObject();
    state.put("last_gen_throughput", ctx.metrics().lastGenerationThroughput());
    var spec = engine.speculation();
    if (spec.isPresent()) {
      state.put("avg_spec_accept_length", spec.get().acceptLength());
    } else {
      state.putNull("avg_spec_accept_length"); // this server does not speculate
    }
    state.put("num_running_reqs", s.running());
    state.put("num_queue_reqs", s.queued());
    state.put("token_usage", s.kvUsage());
    state.put("max_total_num_tokens", kvTokens);
    state.put("max_running_requests", engine.config().maxRunningRequests());
    state.put("chunked_prefill_size", engine.config().chunkedPrefillSize());
    state.put("overlap_schedule", engine.config().overlap());
    state.put("jump_forward", engine.config().jumpForward());
    StepTimes t = engine.stepTimes();
    state.put("steps", t.steps());
    state.put("overlapped_steps", t.overlapped());
    state.put("avg_host_time_per_step_ms", t.recentHostMillis());
    state.put("avg_batch_build_time_ms", t.recentBuildMillis());
    state.put("avg_forward_time_per_step_ms", t.recentForwardMillis());
    state.put("host_time_share", t.recentHostShare());
    state.put("host_seconds_total", t.hostSeconds());
    ex.ok(out);
  }
}
