package dev.ringmaster.sim.model;

/**
 * Which weights a published "activated parameters" figure counts besides the decoder layers (with
 * routed experts scaled by {@code topK / numExperts}). Publishers differ, so a comparison with a
 * published figure has to name the convention it follows.
 */
public enum ActiveCount {
  /**
   * The LM head counted, the embedding table not (a token reads one row of it). DeepSeek's own
   * breakdown of DeepSeek-V3 (README_WEIGHTS.md, first revision: "Activation parameters: 36.6B
   * (including 0.9B for the output Head)").
   */
  WITH_LM_HEAD,
  /**
   * Neither the embedding nor the LM head: the decoder layers only. Zhipu's GLM-5 figure (40B)
   * follows it: 39.88B this way, 40.83B with the head.
   */
  DECODER_ONLY
}
