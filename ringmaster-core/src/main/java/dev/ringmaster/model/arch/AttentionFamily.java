package dev.ringmaster.model.arch;

import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.model.ops.AttentionWeights;
import dev.ringmaster.model.ops.ModelOps;
import dev.ringmaster.model.ops.WeightSource;

/**
 * What one model family adds to the shared decoder ({@link DecoderModel}): its attention block's
 * checkpoint tensors and its forward pass. A new family is one implementation of this interface
 * (plus any op its backends lack).
 */
interface AttentionFamily {
  /** The family of {@code cfg}'s architecture. */
  static AttentionFamily of(ModelConfig cfg) {
    if (cfg.architecture().usesSparseAttention()) {
      return new DsaFamily(cfg);
    }
    return cfg.architecture().usesMla() ? new DeepseekFamily(cfg) : new Qwen3MoeFamily(cfg);
  }

  /** This rank's attention weights of layer {@code layer}, whose tensors start with {@code p}. */
  <T> AttentionWeights<T> load(WeightSource<T> src, String p, int layer, RankContext rank);

  /**
   * Attention of layer {@code layer}: reads {@link dev.ringmaster.model.ops.Act#NORMED}, writes
   * {@link dev.ringmaster.model.ops.Act#ATTN_OUT} (this rank's partial sum under tensor
   * parallelism).
   */
  <T> void forward(ModelOps<T> ops, AttentionWeights<T> w, int layer);
}
