package dev.ringmaster.sim.model;

/**
 * Which weight format applies to which weights. Embeddings, the LM head, the router and norms stay
 * bf16 in every scheme, as in the DeepSeek-V3 FP8 and NVFP4 checkpoints.
 *
 * @param name the preset name
 * @param experts format of routed and shared experts
 * @param dense format of attention projections, the DSA indexer and dense MLPs
 */
public record QuantScheme(String name, WeightFormat experts, WeightFormat dense) {

  /**
   * The preset for {@code --quantization}: bf16 everything; fp8 block-scaled for every linear of a
   * decoder layer; nvfp4 for the experts with bf16 attention and dense MLPs (an NVFP4-experts
   * checkpoint; use {@link #withDense} to model an fp8 attention path).
   */
  public static QuantScheme preset(String name) {
    WeightFormat f = WeightFormat.parse(name);
    return switch (f) {
      case BF16 -> new QuantScheme("bf16", WeightFormat.BF16, WeightFormat.BF16);
      case FP8 -> new QuantScheme("fp8", WeightFormat.FP8, WeightFormat.FP8);
      case NVFP4 -> new QuantScheme("nvfp4", WeightFormat.NVFP4, WeightFormat.BF16);
    };
  }

  /** The same scheme with another format for attention and dense MLP weights. */
  public QuantScheme withDense(WeightFormat denseFormat) {
    return new QuantScheme(name + "+" + denseFormat.cliName() + "-dense", experts, denseFormat);
  }

  /** Format of a weight with the given role. */
  public WeightFormat formatOf(Role role) {
    return switch (role) {
      case ROUTED_EXPERT, SHARED_EXPERT -> experts;
      case ATTENTION_PROJ, INDEXER_PROJ, DENSE_MLP -> dense;
      case EMBEDDING, LM_HEAD, ROUTER, NORM -> WeightFormat.BF16;
    };
  }
}
