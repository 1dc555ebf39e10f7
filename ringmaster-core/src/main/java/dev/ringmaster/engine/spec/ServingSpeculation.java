package dev.ringmaster.engine.spec;

import dev.ringmaster.runtime.LanguageModel;

/**
 * How the batch engine speculates.
 *
 * @param config the algorithm and the draft tokens per request
 * @param draftModel the draft model for {@link SpeculativeAlgorithm#STANDALONE} (else null); each
 *     request gets its own caches on it; the caller closes it after the engine
 * @param policy when to speculate
 * @param margin the gain over plain decoding {@link SpeculativePolicy#AUTO} asks for (0.05: 5%)
 * @param cost the step costs {@code AUTO} decides with; null to measure them when the engine starts
 */
public record ServingSpeculation(
    SpeculativeConfig config,
    LanguageModel draftModel,
    SpeculativePolicy policy,
    double margin,
    SpeculationCostModel cost) {
  /** The margin when none is given. */
  public static final double DEFAULT_MARGIN = 0.05;

  /** Checks that the draft model fits the algorithm. */
  public ServingSpeculation {
    java.util.Objects.requireNonNull(config, "config");
    java.util.Objects.requireNonNull(policy, "policy");
    boolean needsModel = config.algorithm() == SpeculativeAlgorithm.STANDALONE;
    if (needsModel && draftModel == null) {
      throw new IllegalArgumentException("STANDALONE speculation needs a draft model");
    }
    if (!needsModel && draftModel != null) {
      throw new IllegalArgumentException(
          config.algorithm() + " speculation uses no draft model, but one was given");
    }
    if (!(margin >= 0)) {
      throw new IllegalArgumentException("the speculation margin must be >= 0, got " + margin);
    }
  }

  /** Speculation with the default margin and costs measured at start-up. */
  public ServingSpeculation(
      SpeculativeConfig config, LanguageModel draftModel, SpeculativePolicy policy) {
    this(config, draftModel, policy, DEFAULT_MARGIN, null);
  }

  /** A copy deciding from {@code cost} instead of measuring. */
  public ServingSpeculation withCost(SpeculationCostModel cost) {
    return new ServingSpeculation(config, draftModel, policy, margin, cost);
  }
}
