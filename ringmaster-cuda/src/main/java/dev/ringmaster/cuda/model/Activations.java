package dev.ringmaster.cuda.model;

import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.kernels.A2aLayout;
import dev.ringmaster.cuda.kernels.MlaWorkspace;
import dev.ringmaster.cuda.kernels.MoeWorkspace;
import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.model.config.MoeConfig;
import java.util.ArrayList;
import java.util.List;

/**
 * Fixed device buffers for one forward step of up to {@code maxTokens} tokens (the largest prefill
 * chunk or decode batch): allocated once, so captured graphs can reuse their addresses.
 */
final class Activations implements AutoCloseable {
  /** Most KV splits one query token may use (long contexts at batch 1). */
  static final int MAX_SPLITS = 128;

  final int maxTokens;
  final int logitRows;
  final DeviceBuffer hidden;
  final DeviceBuffer normed;
  final DeviceBuffer attnOut;
  final DeviceBuffer mlpOut;
  final DeviceBuffer qa;
  final DeviceBuffer q;
  final DeviceBuffer kva;
  final DeviceBuffer attn;
  final DeviceBuffer k;
  final DeviceBuffer v;
  final DeviceBuffer gateUp;
  final DeviceBuffer act;
  final DeviceBuffer routerLogits;
  final DeviceBuffer expertIds;
  final DeviceBuffer expertWeights;
  final DeviceBuffer selected;
  final DeviceBuffer logits;
  final DeviceBuffer argmax;
  final DeviceBuffer invFreq;
  final MlaWorkspace mla;
  final MoeWorkspace moe;
  private final List<DeviceBuffer> all = new ArrayList<>();

  Activations(ModelConfig cfg, int maxTokens, int logitRows) {
    this(cfg, maxTokens, logitRows, RankShard.single());
  }

  /**
   * Buffers of a tensor-parallel rank: the full-size activations (the replicated hidden state and
   * the gathered logits need them; per-head buffers are simply not filled past this rank's heads)
   * and the routed-expert scratch of this rank's experts and intermediate share (under all-to-all,
   * for the rows it can receive).
   */
  Activations(ModelConfig cfg, int maxTokens, int logitRows, RankShard shard) {
    this.maxTokens = maxTokens;
    this.logitRows = logitRows;
    long t = maxTokens;
    int h = cfg.hiddenSize();
    int heads = cfg.numHeads();
    MoeConfig m = cfg.moe();
    int maxInter = Math.max(cfg.intermediateSize(), m == null ? 0 : m.sharedIntermediateSize());
    hidden = f32(t * h);
    normed = f32(t * h);
    attnOut = f32(t * h);
    mlpOut = f32(t * h);
    qa = f32(t * Math.max(cfg.qLoraRank(), 1));
    q = f32(t * heads * cfg.qkHeadDim());
    kva = f32(t * (cfg.kvLoraRank() + cfg.qkRopeHeadDim()));
    attn = f32(t * heads * cfg.valueHeadDim());
    // GQA keys and values (full size: a rank fills only its share of the KV heads).
    int kvWidth = cfg.architecture().usesMla() ? 1 : cfg.numKvHeads() * cfg.headDim();
    k = f32(t * kvWidth);
    v = f32(t * kvWidth);
    gateUp = f32(t * 2 * maxInter);
    act = f32(t * maxInter);
    int experts = m == null ? 1 : m.numExperts();
    int topK = m == null ? 1 : m.topK();
    routerLogits = f32(t * experts);
    expertIds = f32(t * topK);
    expertWeights = f32(t * topK);
    selected = f32((long) logitRows * h);
    logits = f32((long) logitRows * cfg.vocabSize());
    argmax = f32(logitRows);
    invFreq = f32(Math.max(cfg.ropeDim() / 2, 1));
    // Prefill chunks need one or two splits per token, decode batches many: budget the product.
    long tokenSplits = Math.max(2 * t, 64L * MAX_SPLITS);
    mla =
        new MlaWorkspace(
            maxTokens, MAX_SPLITS, tokenSplits, heads, cfg.kvLoraRank(), cfg.qkRopeHeadDim());
    // All-to-all: the experts run over the rows every rank sent, a block of ceil(n / ranks) each.
    int expertTokens =
        shard.allToAll() ? A2aLayout.maxReceivedRows(maxTokens, shard.size()) : maxTokens;
    moe =
        m == null
            ? null
            : new MoeWorkspace(
                expertTokens,
                shard.ownedExperts(experts).length,
                topK,
                h,
                shard.expertInter(m.expertIntermediateSize()));
  }

  private DeviceBuffer f32(long n) {
    DeviceBuffer b = DeviceBuffer.allocate(4 * Math.max(n, 1));
    all.add(b);
    return b;
  }

  /** Bytes of device memory held. */
  long bytes() {
    long sum = mla.bytes() + (moe == null ? 0 : moe.bytes());
    for (DeviceBuffer b : all) {
      sum += b.bytes();
    }
    return sum;
  }

  @Override
  public void close() {
    all.forEach(DeviceBuffer::close);
    mla.close();
    if (moe != null) {
      moe.close();
    }
  }
}
