package dev.ringmaster.sim.model;

import dev.ringmaster.sim.model.ModelShape.AttentionShape;

/**
 * Bytes the KV cache holds per token. MLA caches the latent ({@code kv_lora_rank}) plus the shared
 * rope key per layer; with the fp8 KV format it stores the latent as e4m3 with one f32 scale per
 * 128 values and keeps the rope part in bf16 (FlashMLA's fp8 layout). GQA caches keys and values of
 * the KV heads. A DSA indexer adds its own fp8 key (head_dim bytes plus an f32 scale) on layers
 * that run it.
 */
public final class KvLayout {
  private KvLayout() {}

  /** Bytes per token for one layer's attention cache (whole model, not divided by TP). */
  public static double attentionBytesPerTokenPerLayer(ModelShape s, String kvDtype) {
    AttentionShape a = s.attention();
    boolean fp8 = "fp8".equalsIgnoreCase(kvDtype);
    if (a.kind() == AttentionKind.MLA) {
      return fp8
          ? a.kvLoraRank() + 4.0 * Math.ceilDiv(a.kvLoraRank(), 128) + 2.0 * a.qkRopeHeadDim()
          : 2.0 * (a.kvLoraRank() + a.qkRopeHeadDim());
    }
    return 2.0 * a.numKvHeads() * a.headDim() * (fp8 ? 1 : 2);
  }

  /** Bytes per token of the DSA indexer key on one indexer layer (fp8 values + f32 scale). */
  public static double indexerBytesPerToken(ModelShape s) {
    return s.indexer() == null ? 0 : s.indexer().headDim() + 4.0;
  }

  /** Bytes per token over all layers of the whole model (one copy of the cache). */
  public static double bytesPerToken(ModelShape s, String kvDtype) {
    double perLayer = attentionBytesPerTokenPerLayer(s, kvDtype) * s.numLayers();
    double idx = s.indexer() == null ? 0 : indexerBytesPerToken(s) * s.indexer().fullLayerCount();
    return perLayer + idx;
  }

  /**
   * Bytes per token one tensor-parallel rank stores. MLA's latent is shared by all heads, so each
   * TP rank keeps the whole latent (and the indexer keys); GQA divides KV heads among ranks, at
   * least one head per rank.
   */
  public static double bytesPerTokenPerRank(ModelShape s, String kvDtype, int tp) {
    if (s.attention().kind() == AttentionKind.MLA) {
      return bytesPerToken(s, kvDtype);
    }
    int kvHeadsPerRank = Math.max(1, s.attention().numKvHeads() / tp);
    return bytesPerToken(s, kvDtype) * kvHeadsPerRank / s.attention().numKvHeads();
  }
}
