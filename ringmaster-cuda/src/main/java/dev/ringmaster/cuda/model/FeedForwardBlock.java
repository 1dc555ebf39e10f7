package dev.ringmaster.cuda.model;

import dev.ringmaster.cuda.kernels.RingmasterKernels;
import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.model.config.MoeConfig;

/**
 * The MLP of a layer on the GPU: a dense SwiGLU, or a mixture of experts (router, routed experts
 * over expert-sorted tokens, shared experts added), as the CPU's {@code DenseMlp} / {@code MoeMlp}.
 */
final class FeedForwardBlock {
  private final MoeConfig moe;
  private final int hidden;
  private final GroupedExperts grouped;
  private final int expertInter;
  private final java.util.function.IntConsumer afterRouting;

  FeedForwardBlock(ModelConfig cfg, GroupedExperts grouped) {
    this(cfg, grouped, cfg.moe() == null ? 0 : cfg.moe().expertIntermediateSize(), null);
  }

  /**
   * The block of a tensor/expert-parallel rank: its experts have {@code expertInter} intermediate
   * features; {@code afterRouting} (or null) runs on the {@code n} routed tokens before the experts
   * (expert parallelism drops the pairs other ranks compute there).
   */
  FeedForwardBlock(
      ModelConfig cfg,
      GroupedExperts grouped,
      int expertInter,
      java.util.function.IntConsumer afterRouting) {
    this.moe = cfg.moe();
    this.hidden = cfg.hiddenSize();
    this.grouped = grouped;
    this.expertInter = expertInter;
    this.afterRouting = afterRouting;
  }

  /**
   * Reads {@code act.normed}, writes {@code act.mlpOut} for {@code n} tokens; {@code useGrouped}
   * runs the routed experts as per-expert GEMMs (host sync: never while capturing a graph).
   */
  void forward(
      GpuOps ops,
      Activations act,
      LayerWeights w,
      int n,
      boolean useGrouped,
      java.util.function.Consumer<String> mark) {
    if (w.dense() != null) {
      ops.swiglu(act.mlpOut.ptr(), act.normed.ptr(), w.dense(), act.gateUp.ptr(), act.act.ptr(), n);
      mark.accept("mlp.dense");
      return;
    }
    LayerWeights.MoeWeights m = w.moe();
    RingmasterKernels k = ops.kernels;
    ops.linear(act.routerLogits.ptr(), act.normed.ptr(), m.gate(), n);
    k.moeRoute(
        ops.stream,
        act.expertIds.ptr(),
        act.expertWeights.ptr(),
        act.routerLogits.ptr(),
        m.scoreBias(),
        n,
        moe.numExperts(),
        moe.topK(),
        moe.scoring() == MoeConfig.Scoring.SIGMOID
            ? RingmasterKernels.SCORING_SIGMOID
            : RingmasterKernels.SCORING_SOFTMAX,
        switch (moe.selection()) {
          case GREEDY -> RingmasterKernels.SELECT_GREEDY;
          case GROUP_LIMITED_GREEDY -> RingmasterKernels.SELECT_GROUP_LIMITED;
          case NOAUX_TC -> RingmasterKernels.SELECT_NOAUX_TC;
        },
        moe.numGroups(),
        moe.topKGroups(),
        moe.normTopKProb(),
        (float) moe.routedScalingFactor());
    if (afterRouting != null) {
      afterRouting.accept(n);
    }
    mark.accept("moe.router");
    boolean shared = m.shared() != null;
    if (shared) {
      ops.swiglu(
          act.mlpOut.ptr(), act.normed.ptr(), m.shared(), act.gateUp.ptr(), act.act.ptr(), n);
      mark.accept("moe.shared_experts");
    }
    if (useGrouped && grouped != null) {
      grouped.forward(
          ops,
          act.moe,
          act.mlpOut.ptr(),
          act.normed.ptr(),
          m.w13(),
          m.w2(),
          act.expertIds.ptr(),
          act.expertWeights.ptr(),
          n,
          shared,
          mark);
      mark.accept("moe.grouped.scatter_combine");
      return;
    }
    k.moeExperts(
        ops.stream,
        act.moe,
        act.mlpOut.ptr(),
        act.normed.ptr(),
        m.w13(),
        m.w2(),
        act.expertIds.ptr(),
        act.expertWeights.ptr(),
        n,
        hidden,
        expertInter,
        shared);
    mark.accept("moe.routed_experts");
  }
}
