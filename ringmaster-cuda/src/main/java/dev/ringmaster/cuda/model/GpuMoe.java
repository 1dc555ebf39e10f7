package dev.ringmaster.cuda.model;

import dev.ringmaster.cuda.kernels.MoeKernels;
import dev.ringmaster.cuda.kernels.MoeRouting;
import dev.ringmaster.cuda.kernels.RingmasterKernels;
import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.model.config.MoeConfig;

/**
 * The GPU's mixture-of-experts op: router, routed experts over expert-sorted tokens, shared experts
 * added (on the side stream where they can overlap the routed ones; on an all-to-all rank through
 * {@link ExpertAllToAll}). The kernels are chosen here by step size: one router + routing launch
 * and the CUDA-core expert kernels for decode-sized steps, the tensor-core expert kernels or
 * per-expert GEMMs for prefill.
 */
final class GpuMoe {
  private final MoeConfig moe;
  private final MoeRouting routing;
  private final int hidden;
  private final GroupedExperts grouped;
  private final int expertInter;
  private final java.util.function.IntConsumer afterRouting;
  private final ExpertAllToAll allToAll;

  /**
   * The routed experts' rows that {@link #forward} left unsummed for the next norm: {@code
   * pairRows} ({@code [n * topK, hidden]}, pair order) to be added, with the shared experts' output
   * when {@code shared}, to the residual ({@link GpuModelOps}).
   */
  record PendingCombine(long pairRows, int topK, boolean shared) {}

  private boolean deferCombine;
  private PendingCombine pending;

  GpuMoe(ModelConfig cfg, GroupedExperts grouped) {
    this(cfg, grouped, cfg.moe() == null ? 0 : cfg.moe().expertIntermediateSize(), null, null);
  }

  /**
   * The block of a tensor/expert-parallel rank: its experts have {@code expertInter} intermediate
   * features; {@code afterRouting} (or null) runs on the {@code n} routed tokens before the experts
   * (expert parallelism without all-to-all drops the pairs other ranks compute there); {@code
   * allToAll} (or null) runs the MoE layers with all-to-all dispatch instead.
   */
  GpuMoe(
      ModelConfig cfg,
      GroupedExperts grouped,
      int expertInter,
      java.util.function.IntConsumer afterRouting,
      ExpertAllToAll allToAll) {
    this.moe = cfg.moe();
    this.routing = moe == null ? null : MoeRouting.of(moe);
    this.hidden = cfg.hiddenSize();
    this.grouped = grouped;
    this.expertInter = expertInter;
    this.afterRouting = afterRouting;
    this.allToAll = allToAll;
  }

  /**
   * Whether the next {@link #forward} calls leave the CUDA-core experts' sum to the caller ({@link
   * #takePendingCombine}); also drops any sum left before.
   */
  void deferCombine(boolean defer) {
    deferCombine = defer;
    pending = null;
  }

  /** The sum the last {@link #forward} left to the caller, or null; cleared. */
  PendingCombine takePendingCombine() {
    PendingCombine p = pending;
    pending = null;
    return p;
  }

  /**
   * Whether the shared experts of this step run on the side stream: GEMV-only steps ({@link
   * GpuOps#gemvSwiglu}, no cuBLAS handle needed there) of a MoE layer without all-to-all dispatch.
   * A profiled step makes the same choice (it profiles the production sequence): the side stream's
   * time then counts in the group whose mark follows the join, {@code
   * moe.routed_and_shared_experts}.
   */
  private boolean sharedExpertsAside(
      GpuOps ops, KernelWeights.MoeWeights m, int n, boolean useGrouped) {
    return ops.tuning.sharedExpertStream()
        && m.shared() != null
        && allToAll == null
        && !useGrouped
        && ops.gemvSwiglu(m.shared(), n);
  }

  /** The FP8 shared experts' buffers for the routed experts' launches to carry them. */
  private static MoeKernels.Fp8SharedExperts fp8SharedExperts(
      KernelWeights.DenseWeights sh, Activations act) {
    return new MoeKernels.Fp8SharedExperts(
        sh.gateUp().ptr(),
        sh.gateUp().scales(),
        sh.inter(),
        act.act.ptr(),
        sh.down().ptr(),
        sh.down().scales(),
        sh.down().scalePartRows(),
        act.mlpOut.ptr());
  }

  /**
   * Whether a lone token's FP8 shared experts run inside the one-token FP8 routed experts' launches
   * ({@code moe-shared-fused}; {@link MoeKernels.Fp8SharedExperts}): FP8 routed and shared experts
   * without bias, on one GPU, where the shared experts would otherwise take the SwiGLU GEMV. The
   * same bits as the side stream's kernels, in two launches fewer.
   */
  private boolean sharedInFp8Experts(
      GpuOps ops, KernelWeights.MoeWeights m, int n, boolean useGrouped, boolean tensorCores) {
    KernelWeights.DenseWeights sh = m.shared();
    return ops.tuning.moeSharedFused()
        && sh != null
        && allToAll == null
        && afterRouting == null
        && !useGrouped
        && m.fp8()
        && sh.gateUp().fp8()
        && sh.down().fp8()
        && sh.gateUp().scalePartRows() == sh.inter()
        && sh.down().rows() == hidden
        && sh.down().cols() == sh.inter()
        && ops.gemvSwiglu(sh, n)
        && ops.kernels.moe().takesFp8SharedExperts(n, tensorCores);
  }

  /**
   * Whether the output is complete on this rank (all-to-all dispatch), rather than a partial sum
   * that the ranks allreduce.
   */
  boolean replicatedOutput() {
    return allToAll != null;
  }

  /**
   * Reads {@code act.normed} for {@code n} tokens and returns where the output rows are: {@code
   * act.mlpOut}, or the all-to-all's gathered rows; {@code useGrouped} runs the routed experts as
   * per-expert GEMMs (host sync: never while capturing a graph); {@code liveTokens}: the device int
   * below which tokens are real, the rest a graph bucket's padding rows that route to no expert;
   * {@code mark} charges the work launched so far to an op group when the step is profiled.
   */
  long forward(
      GpuOps ops,
      Activations act,
      KernelWeights.MoeWeights m,
      int n,
      boolean useGrouped,
      long liveTokens,
      java.util.function.Consumer<String> mark) {
    RingmasterKernels k = ops.kernels;
    // FP8 and NVFP4 experts take their CUDA-core or tensor-core kernels by their own threshold
    // (quant-moe-mma-min-tokens), also for long prefills (no grouped-GEMM or pair variants of them:
    // the tensor-core
    // kernels read the codes directly, where a grouped GEMM would need a dequantized copy of the
    // experts).
    boolean quantized = m.quantized();
    if (quantized && allToAll != null) {
      throw new IllegalStateException("quantized experts do not run with all-to-all dispatch");
    }
    useGrouped &= !quantized;
    boolean tensorCores =
        quantized
            ? k.moe().quantizedMoeUsesTensorCores(n, hidden, expertInter)
            : k.moe().moeUsesTensorCores(n, hidden, expertInter);
    boolean pairs = !quantized && ops.pairExperts(n);
    boolean sharedInExperts = sharedInFp8Experts(ops, m, n, useGrouped, tensorCores);
    boolean sharedAside = !sharedInExperts && sharedExpertsAside(ops, m, n, useGrouped);
    if (sharedAside) {
      // The shared experts need only the normed input: on the side stream they overlap the router
      // and the routed experts (small decode steps leave most of the GPU idle in each kernel).
      ops.forkSide();
      ops.swigluGemv(ops.side, act.mlpOut.ptr(), act.normed.ptr(), m.shared(), act.act.ptr(), n);
    }
    // Where the CUDA-core grouped experts follow, the routing launch also groups the pairs; not
    // under expert parallelism, whose filter (afterRouting) drops other ranks' pairs afterwards.
    boolean aligned =
        allToAll == null
            && afterRouting == null
            && !(useGrouped && grouped != null)
            && !pairs
            && ops.fusedRouting(m.gate(), n)
            && !tensorCores;
    route(ops, act, m, n, aligned, liveTokens);
    if (afterRouting != null) {
      afterRouting.accept(n);
    }
    mark.accept("moe.router");
    if (allToAll != null) {
      // Every rank routes every token (the router is small), so routing is the one-GPU routing.
      return allToAll.forward(
          ops, act, m, n, expertInter, k.moe().moeUsesTensorCores(n, hidden, expertInter), mark);
    }
    boolean shared = m.shared() != null;
    if (shared && !sharedAside && !sharedInExperts) {
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
      return act.mlpOut.ptr();
    }
    if (pairs) {
      // Straight from the routed pairs; the side stream joins before the down projections add the
      // routed sum to the shared experts' output.
      var small = k.smallBatchMoe();
      small.gateUp(
          ops.stream,
          act.moe,
          act.normed.ptr(),
          m.w13(),
          act.expertIds.ptr(),
          n,
          hidden,
          expertInter);
      if (sharedAside) {
        ops.joinSide();
      }
      small.downSum(
          ops.stream,
          act.moe,
          act.mlpOut.ptr(),
          m.w2(),
          act.expertIds.ptr(),
          act.expertWeights.ptr(),
          n,
          hidden,
          expertInter,
          shared);
    } else if (m.nvfp4()) {
      k.nvfp4()
          .moeExpertPairs(
              ops.stream,
              k.moe(),
              act.moe,
              act.normed.ptr(),
              m.w13(),
              m.s13(),
              m.g13(),
              m.w2(),
              m.s2(),
              m.g2(),
              act.expertIds.ptr(),
              act.expertWeights.ptr(),
              n,
              hidden,
              expertInter,
              tensorCores,
              aligned);
      combine(ops, act, n, shared, sharedAside);
    } else if (m.fp8()) {
      // One token may carry the shared experts' blocks in the routed experts' two launches.
      k.moe()
          .moeExpertPairsFp8(
              ops.stream,
              act.moe,
              act.normed.ptr(),
              m.w13(),
              m.s13(),
              m.w2(),
              m.s2(),
              act.expertIds.ptr(),
              act.expertWeights.ptr(),
              n,
              hidden,
              expertInter,
              tensorCores,
              aligned,
              MoeKernels.fp8PassTokens(act.moe, n, tensorCores),
              sharedInExperts ? fp8SharedExperts(m.shared(), act) : null);
      combine(ops, act, n, shared, sharedAside);
    } else {
      // MoeKernels.moeExperts as its two steps, so that the side stream joins before the
      // sum.
      k.moe()
          .moeExpertPairs(
              ops.stream,
              act.moe,
              act.normed.ptr(),
              m.w13(),
              m.w2(),
              act.expertIds.ptr(),
              act.expertWeights.ptr(),
              n,
              hidden,
              expertInter,
              tensorCores,
              aligned);
      combine(ops, act, n, shared, sharedAside);
    }
    mark.accept(
        sharedAside || sharedInExperts ? "moe.routed_and_shared_experts" : "moe.routed_experts");
    return act.mlpOut.ptr();
  }

  /**
   * Joins the side stream, then sums the pair rows onto the output (or leaves that to the norm).
   */
  private void combine(GpuOps ops, Activations act, int n, boolean shared, boolean sharedAside) {
    if (sharedAside) {
      ops.joinSide();
    }
    if (deferCombine) {
      pending = new PendingCombine(act.moe.pairRowsPtr(), moe.topK(), shared);
    } else {
      ops.kernels
          .moe()
          .moeCombine(
              ops.stream, act.mlpOut.ptr(), act.moe.pairRowsPtr(), n, hidden, moe.topK(), shared);
    }
  }

  /**
   * Router logits and routing of {@code n} tokens into {@code act.expertIds} / {@code
   * act.expertWeights}: one launch in decode-sized steps (which with {@code align} also groups the
   * pairs by expert into {@code act.moe}), else a linear layer and the routing kernel (the same
   * results).
   */
  private void route(
      GpuOps ops,
      Activations act,
      KernelWeights.MoeWeights m,
      int n,
      boolean align,
      long liveTokens) {
    if (ops.fusedRouting(m.gate(), n)) {
      ops.kernels
          .smallBatchMoe()
          .routerRoute(
              ops.stream,
              act.moe,
              act.routerLogits.ptr(),
              act.expertIds.ptr(),
              act.expertWeights.ptr(),
              m.gate().ptr(),
              act.normed.ptr(),
              m.gate().cols(),
              m.scoreBias(),
              n,
              routing,
              align,
              liveTokens);
      return;
    }
    ops.linear(act.routerLogits.ptr(), act.normed.ptr(), m.gate(), n);
    ops.kernels
        .moe()
        .moeRoute(
            ops.stream,
            act.expertIds.ptr(),
            act.expertWeights.ptr(),
            act.routerLogits.ptr(),
            m.scoreBias(),
            n,
            routing,
            liveTokens);
  }
}
