package dev.ringmaster.model.config;

/**
 * Mixture-of-experts routing and expert shapes.
 *
 * @param numExperts routed experts per MoE layer
 * @param topK experts chosen per token
 * @param expertIntermediateSize intermediate size of one routed expert
 * @param sharedIntermediateSize intermediate size of the shared expert MLP (0 when none)
 * @param scoring how router logits become scores
 * @param selection how the top-k experts are chosen
 * @param numGroups expert groups for group-limited selection (1 when not grouped)
 * @param topKGroups groups kept per token in group-limited selection
 * @param normTopKProb whether the chosen weights are renormalised to sum to one
 * @param routedScalingFactor multiplier of the routed experts' combined output
 * @param hasScoreCorrectionBias whether the router has {@code e_score_correction_bias}
 */
public record MoeConfig(
    int numExperts,
    int topK,
    int expertIntermediateSize,
    int sharedIntermediateSize,
    Scoring scoring,
    Selection selection,
    int numGroups,
    int topKGroups,
    boolean normTopKProb,
    double routedScalingFactor,
    boolean hasScoreCorrectionBias) {

  /** Router score function. */
  public enum Scoring {
    /** softmax over all experts (DeepSeek-V2, Qwen3-MoE). */
    SOFTMAX,
    /** independent sigmoid per expert (DeepSeek-V3). */
    SIGMOID
  }

  /** Expert selection method. */
  public enum Selection {
    /** plain top-k over all experts. */
    GREEDY,
    /** DeepSeek-V2's group_limited_greedy: groups ranked by their best expert score. */
    GROUP_LIMITED_GREEDY,
    /** DeepSeek-V3's noaux_tc: groups ranked by the sum of their two best biased scores. */
    NOAUX_TC
  }
}
