package dev.ringmaster.engine.spec;

import dev.ringmaster.runtime.DraftHead;
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
 * @param draftHead the EAGLE-3 head for {@link SpeculativeAlgorithm#EAGLE3} (else null), loaded
 *     over the engine's model; each request gets its own cache on it; the caller closes it after
 *     the engine
 */
public record ServingSpeculation(
    SpeculativeConfig config,
    LanguageModel draftModel,
    SpeculativePolicy policy,
    double margin,
    SpeculationCostModel cost,
    DraftHead draftHead) {
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
    SpeculativeGenerator.requireHead(config.algorithm(), draftHead);
    if (!(margin >= 0)) {
      throw new IllegalArgumentException("the speculation margin must be >= 0, got " + margin);
    }
  }

  /** Speculation without an EAGLE-3 head. */
  public ServingSpeculation(
      SpeculativeConfig config,
      LanguageModel draftModel,
      SpeculativePolicy policy,
      double margin,
      SpeculationCostModel cost) {
    this(config, draftModel, policy, margin, cost, null);
  }

  /** Speculation with the default margin and costs measured at start-up. */
  public ServingSpeculation(
      SpeculativeConfig config, LanguageModel draftModel, SpeculativePolicy policy) {
    this(config, draftModel, policy, DEFAULT_MARGIN, null, null);
  }

  /** EAGLE-3 speculation over {@code head}, the default margin and costs measured at start-up. */
  public static ServingSpeculation eagle3(
      SpeculativeConfig config, DraftHead head, SpeculativePolicy policy) {
    return new ServingSpeculation(config, null, policy, DEFAULT_MARGIN, null, head);
  }

  /** A copy deciding from {@code cost} instead of measuring. */
  public ServingSpeculation withCost(SpeculationCostModel cost) {
    return new ServingSpeculation(config, draftModel, policy, margin, cost, draftHead);
  }
}
