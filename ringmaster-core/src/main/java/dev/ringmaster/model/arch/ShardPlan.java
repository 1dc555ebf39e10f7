package dev.ringmaster.model.arch;

import dev.ringmaster.model.config.ModelConfig;
import java.util.ArrayList;
import java.util.List;

/**
 * Checks that a model's dimensions divide by the parallel degrees, naming every dimension that does
 * not, before any weight is read.
 */
public final class ShardPlan {
  private ShardPlan() {}

  /**
   * Throws {@link IllegalArgumentException} listing each config dimension that the layout cannot
   * split.
   */
  public static void check(ModelConfig cfg, ParallelConfig p) {
    int tp = p.tpSize();
    if (tp == 1) {
      return;
    }
    List<String> bad = new ArrayList<>();
    need(bad, "num_attention_heads", cfg.numHeads(), tp, "--tp-size");
    if (!cfg.architecture().usesMla()) {
      need(bad, "num_key_value_heads", cfg.numKvHeads(), tp, "--tp-size");
    }
    need(bad, "vocab_size", cfg.vocabSize(), tp, "--tp-size");
    boolean anyDense = cfg.moeLayers().contains(false);
    if (anyDense) {
      need(bad, "intermediate_size", cfg.intermediateSize(), tp, "--tp-size");
    }
    if (cfg.moe() != null && cfg.moeLayers().contains(true)) {
      if (p.expertParallel()) {
        need(bad, "n_routed_experts", cfg.moe().numExperts(), p.epSize(), "--ep-size");
      } else {
        need(bad, "moe_intermediate_size", cfg.moe().expertIntermediateSize(), tp, "--tp-size");
      }
      if (cfg.moe().sharedIntermediateSize() > 0
          && p.a2a() != ParallelConfig.MoeA2aBackend.ALL_TO_ALL) {
        need(
            bad,
            "shared experts' intermediate size (moe_intermediate_size * n_shared_experts)",
            cfg.moe().sharedIntermediateSize(),
            tp,
            "--tp-size");
      }
    }
    if (!bad.isEmpty()) {
      throw new IllegalArgumentException(
          "this model cannot be split this way: " + String.join("; ", bad));
    }
  }

  private static void need(List<String> bad, String dim, int value, int degree, String flag) {
    if (value % degree != 0) {
      bad.add(dim + " (" + value + ") is not divisible by " + flag + " " + degree);
    }
  }
}
