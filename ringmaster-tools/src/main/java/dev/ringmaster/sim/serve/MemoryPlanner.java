package dev.ringmaster.sim.serve;

import dev.ringmaster.sim.hw.HardwareProfile;
import dev.ringmaster.sim.model.KvLayout;
import dev.ringmaster.sim.model.ModelShape;
import dev.ringmaster.sim.model.Role;
import dev.ringmaster.sim.model.Sharding;
import dev.ringmaster.sim.model.Split;
import dev.ringmaster.sim.model.Weight;
import dev.ringmaster.sim.model.WeightInventory;
import java.util.List;

/**
 * Plans one rank's memory the way Ringmaster's planner does: weights, prefill workspace, CUDA graph
 * pools and all-to-all buffers come first, the KV cache takes what is left (less 3% allocator
 * slack).
 *
 * <p>With speculative decoding the draft model's weights count with the target's and every cached
 * token holds the draft's KV too (one pool for both).
 *
 * <p>Assumptions, to be replaced by measurement: every captured graph keeps its own decode
 * activations alive (so graph memory grows with the sum of captured batch sizes); the engine's
 * all-to-all holds f32 blocks sized for a full prefill chunk ({@link #engineAllToAllBytes}) plus 1
 * GiB for NCCL's channels, the DeepEP what-if low-latency buffers ({@link #deepEpLowLatencyBytes}:
 * 128 tokens per rank for decode, plus a 1 GiB normal-mode buffer for prefill; in {@code
 * deepep-low-latency} sized for the whole prefill chunk instead).
 */
public final class MemoryPlanner {
  private static final double SLACK = 0.97;

  /** NCCL's channel buffers for the all-to-all's peers, allowed beside the engine's blocks. */
  private static final double NCCL_CHANNEL_BYTES = 1L << 30;

  private static final int A2A_TOKENS_PER_RANK = 128;

  private MemoryPlanner() {}

  /** The plan for a configuration on a profile. */
  public static MemoryPlan plan(WeightInventory inv, ServingConfig cfg, HardwareProfile hw) {
    return plan(inv, cfg, hw, 0);
  }

  /**
   * The plan with the KV cache also bounded, as the engine bounds it, by {@code memFractionStatic}
   * of the GPU's memory less the weights (0: no such bound).
   */
  public static MemoryPlan plan(
      WeightInventory inv, ServingConfig cfg, HardwareProfile hw, double memFractionStatic) {
    ModelShape s = inv.shape();
    Sharding sh = cfg.sharding();
    double weights = weightsOnRank(inv.all(), cfg);
    double perTokenAct = activationBytesPerToken(s, sh);
    double logitsPerToken = 4.0 * s.vocabSize() / cfg.tp();
    double activations = cfg.chunkedPrefill() * perTokenAct + cfg.cudaGraphMaxBs() * logitsPerToken;
    int queries = cfg.spec() == null ? 1 : cfg.spec().numDraftTokens();
    double graphs = 0;
    int graphCount = 0;
    if (cfg.cudaGraph()) {
      for (int b : CudaGraphSchedule.capturedSizes(cfg.cudaGraphMaxBs())) {
        graphs += (double) b * queries * (perTokenAct + logitsPerToken);
        graphCount++;
      }
    }
    double a2a = 0;
    if (cfg.a2a() == A2aBackend.DEEPEP && s.moe() != null && sh.ep() > 1) {
      a2a = deepEpLowLatencyBytes(s, A2A_TOKENS_PER_RANK) + (1L << 30);
    } else if (cfg.a2a() == A2aBackend.DEEPEP_LOW_LATENCY && s.moe() != null && sh.ep() > 1) {
      a2a = deepEpLowLatencyBytes(s, cfg.chunkedPrefill());
    } else if (cfg.a2a() == A2aBackend.ALL_TO_ALL && s.moe() != null && sh.ep() > 1) {
      a2a = engineAllToAllBytes(s, sh.ep(), cfg.chunkedPrefill()) + NCCL_CHANNEL_BYTES;
    }
    double draftWeights = 0;
    double draftKvPerToken = 0;
    if (cfg.spec() != null) {
      // the draft model's weights sit beside the target's, and every cached token also holds
      // the draft's KV (EAGLE3's layer, or the MTP layer's) in the same pool
      ModelShape draft = DraftModels.draft(s, cfg.spec().algorithm());
      draftWeights = weightsOnRank(draftWeights(inv, draft, cfg.spec().algorithm()), cfg);
      draftKvPerToken = KvLayout.bytesPerTokenPerRank(draft, cfg.kvDtype(), cfg.tp());
    }
    weights += draftWeights;
    double reserved = hw.gpu().reservedBytes();
    double total = hw.gpu().memoryBytes();
    double kv = (total - reserved - weights - activations - graphs - a2a) * SLACK;
    if (memFractionStatic > 0) {
      kv = Math.min(kv, memFractionStatic * total - weights);
    }
    double perToken = KvLayout.bytesPerTokenPerRank(s, cfg.kvDtype(), cfg.tp()) + draftKvPerToken;
    long capacity = kv > 0 ? (long) (kv / perToken) : 0;
    return new MemoryPlan(
        total,
        reserved,
        weights,
        activations,
        graphs,
        graphCount,
        a2a,
        kv,
        perToken,
        capacity,
        capacity / cfg.contextLen());
  }

  /**
   * The draft's own weights: MTP shares the target's embedding and LM head (the checkpoint's MTP
   * layers where it has them), EAGLE3's head is its own.
   */
  static List<Weight> draftWeights(WeightInventory target, ModelShape draft, String algorithm) {
    if (!algorithm.equals("MTP")) {
      return new WeightInventory(draft).all();
    }
    if (target.shape().numMtpLayers() > 0) {
      return target.mtp();
    }
    return new WeightInventory(draft)
        .all().stream()
            .filter(w -> w.role() != Role.EMBEDDING && w.role() != Role.LM_HEAD)
            .toList();
  }

  /** Bytes of {@code weights} one rank holds. */
  static double weightsOnRank(List<Weight> list, ServingConfig cfg) {
    Sharding sh = cfg.sharding();
    double weights = 0;
    for (Weight w : list) {
      double frac =
          w.split() == Split.EXPERT ? 1.0 / sh.ep() / sh.expertTp() : sh.fraction(w.split());
      weights += w.bytes(cfg.quant()) * frac;
    }
    return weights;
  }

  /**
   * Live activation bytes per token on one rank: residual and norm outputs, attention queries and
   * outputs of this rank's heads, and the routed/dense MLP intermediates (bf16).
   */
  static double activationBytesPerToken(ModelShape s, Sharding sh) {
    int h = s.hiddenSize();
    var a = s.attention();
    double heads = (double) a.numHeads() / sh.tp();
    double attn = heads * (a.qkHeadDim() + 2.0 * a.valueHeadDim()) + a.kvLoraRank() + a.qLoraRank();
    double mlp;
    if (s.moe() != null) {
      mlp =
          3.0 * s.moe().topK() * s.moe().expertIntermediateSize() / sh.expertTp()
              + s.moe().numExperts();
    } else {
      mlp = 3.0 * s.denseIntermediateSize() / sh.tp();
    }
    return 2.0 * (8.0 * h + attn + mlp);
  }

  /** Weight bytes of one role on this rank (for reports). */
  static double weightsOf(WeightInventory inv, ServingConfig cfg, Role role) {
    Sharding sh = cfg.sharding();
    double sum = 0;
    for (Weight w : inv.all()) {
      if (w.role() == role) {
        double frac =
            w.split() == Split.EXPERT ? 1.0 / sh.ep() / sh.expertTp() : sh.fraction(w.split());
        sum += w.bytes(cfg.quant()) * frac;
      }
    }
    return sum;
  }

  /**
   * DeepEP's low-latency buffers for {@code tokensPerRank} dispatched tokens per rank, as its
   * {@code LowLatencyLayout} lays them out: odd and even copies (double buffering) of a send buffer
   * (the larger of the dispatch rows and the combine rows for every expert) and a receive buffer
   * sized for the worst case, every expert receiving every token of every rank's limit (the larger
   * of dispatch and combine messages); a dispatch message is a 16-byte header and the larger of
   * bf16 and fp8-with-scales rows, a combine message a bf16 row.
   */
  static double deepEpLowLatencyBytes(ModelShape s, int tokensPerRank) {
    double h = s.hiddenSize();
    double experts = s.moe().numExperts();
    double t = tokensPerRank;
    double dispatchMsg = 16 + Math.max(2 * h, h + 4 * (h / 128));
    double combineMsg = 2 * h;
    double send = Math.max(t * dispatchMsg, experts * t * combineMsg);
    double recv = experts * t * Math.max(dispatchMsg, combineMsg);
    return 2 * (send + recv);
  }

  /**
   * The engine's all-to-all buffers ({@code ExpertAllToAll}) for steps of up to {@code maxTokens}:
   * f32 send and receive blocks of hidden + 2 topK per row, the unpacked rows, ids and weights,
   * topK output rows per row coming back, the slice and the gathered rows.
   */
  static double engineAllToAllBytes(ModelShape s, int ep, int maxTokens) {
    double rows = ep * Math.ceil((double) maxTokens / ep);
    double h = s.hiddenSize();
    int k = s.moe().topK();
    double floats = rows * (2 * (h + 2.0 * k) + h + 2.0 * k + k * h + h) + rows / ep * h;
    return 4 * floats;
  }
}
