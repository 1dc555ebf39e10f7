package dev.ringmaster.cuda.kernels;

import dev.ringmaster.model.config.MoeConfig;

/**
 * How a MoE layer routes its tokens, in the routing kernels' terms ({@code moe_route.cu}): scoring
 * ({@link MoeKernels#SCORING_SOFTMAX} or {@link MoeKernels#SCORING_SIGMOID}), selection ({@link
 * MoeKernels#SELECT_GREEDY}, {@link MoeKernels#SELECT_GROUP_LIMITED} or {@link
 * MoeKernels#SELECT_NOAUX_TC}), expert groups, renormalisation and scaling of the picked weights.
 */
public record MoeRouting(
    int numExperts,
    int topK,
    int scoring,
    int selection,
    int numGroups,
    int topKGroups,
    boolean normTopK,
    float routedScaling) {

  /** Rejects routings the kernels cannot hold. */
  public MoeRouting {
    MoeKernels.checkRouting(numExperts, topK, numGroups);
  }

  /** The routing of a model's MoE layers. */
  public static MoeRouting of(MoeConfig moe) {
    return new MoeRouting(
        moe.numExperts(),
        moe.topK(),
        moe.scoring() == MoeConfig.Scoring.SIGMOID
            ? MoeKernels.SCORING_SIGMOID
            : MoeKernels.SCORING_SOFTMAX,
        switch (moe.selection()) {
          case GREEDY -> MoeKernels.SELECT_GREEDY;
          case GROUP_LIMITED_GREEDY -> MoeKernels.SELECT_GROUP_LIMITED;
          case NOAUX_TC -> MoeKernels.SELECT_NOAUX_TC;
        },
        moe.numGroups(),
        moe.topKGroups(),
        moe.normTopKProb(),
        (float) moe.routedScalingFactor());
  }

  /** Sets this routing's arguments from {@code first} on, in the kernels' order (8 of them). */
  void bind(dev.ringmaster.cuda.driver.Kernel k, int first) {
    k.arg(first, numExperts).arg(first + 1, topK).arg(first + 2, scoring);
    k.arg(first + 3, selection).arg(first + 4, Math.max(numGroups, 1)).arg(first + 5, topKGroups);
    k.arg(first + 6, normTopK ? 1 : 0).arg(first + 7, routedScaling);
  }
}
