package dev.ringmaster.model.ops;

/**
 * The names of one MoE layer's routed-expert tensors in the two layouts checkpoints use: per expert
 * ({@code experts.E.gate_proj.weight}, as {@code save_pretrained} writes DeepSeek and Qwen3-MoE) or
 * fused ({@code experts.gate_up_proj [E, 2I, H]}, gate rows first, and {@code experts.down_proj [E,
 * H, I]}, transformers 5's in-memory layout).
 *
 * @param prefix the experts' prefix, e.g. {@code model.layers.3.mlp.experts}
 */
public record ExpertTensors(String prefix) {
  /** The fused gate and up projections of every expert, {@code [E, 2I, H]}. */
  public String fusedGateUp() {
    return prefix + ".gate_up_proj";
  }

  /** The fused down projections of every expert, {@code [E, H, I]}. */
  public String fusedDown() {
    return prefix + ".down_proj";
  }

  /** Expert {@code e}'s gate projection weight, {@code [I, H]}. */
  public String gate(int e) {
    return prefix + "." + e + ".gate_proj.weight";
  }

  /** Expert {@code e}'s up projection weight, {@code [I, H]}. */
  public String up(int e) {
    return prefix + "." + e + ".up_proj.weight";
  }

  /** Expert {@code e}'s down projection weight, {@code [H, I]}. */
  public String down(int e) {
    return prefix + "." + e + ".down_proj.weight";
  }
}
