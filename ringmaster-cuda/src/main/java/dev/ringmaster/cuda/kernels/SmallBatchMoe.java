package dev.ringmaster.cuda.kernels;

import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.Kernel;
import java.util.function.BiFunction;
import java.util.function.IntSupplier;

/**
 * The MoE layer of the smallest decode steps ({@code moe_small_batch.cu}) in three launches instead
 * of six: the router GEMV with the routing done by its last block, the gate/up projections straight
 * from the routed pairs (no grouping by expert), and the down projections summed per token. Results
 * equal the general path's bit for bit ({@link RingmasterKernels#gemv} + {@link
 * MoeKernels#moeRoute}; {@link MoeKernels#moeExpertsFused}). Tokens that share an expert stream it
 * once each, so this suits one or two tokens. The model takes the routing kernel in every
 * GEMV-sized step; the pair kernels only where {@code --kernel-option moe-pair-tokens} asks (their
 * down projection, a warp per output row over all slots, has a sixth of the grouped kernel's warps
 * and measured slower at batch 1 on an H200).
 */
public final class SmallBatchMoe {
  private final Kernel routerRoute;
  private final Kernel gateUpPairs;
  private final Kernel downSum;
  private final IntSupplier gemvTokenGroup;

  /** {@code gemvTokenGroup}: the router GEMV's tokens per pass, read at each launch (4 or 8). */
  SmallBatchMoe(BiFunction<String, Integer, Kernel> kernel, IntSupplier gemvTokenGroup) {
    this.gemvTokenGroup = gemvTokenGroup;
    routerRoute = kernel.apply("rm_router_route", 23);
    gateUpPairs = kernel.apply("rm_moe_gate_up_pairs", 7);
    downSum = kernel.apply("rm_moe_down_sum", 10);
  }

  /**
   * {@code logits = x . gate^T} (bf16 {@code gate [numExperts, k]}) for {@code n} tokens, then the
   * routing of {@link MoeKernels#moeRoute} (same arguments) into {@code experts} and {@code
   * weights}, in one launch; uses {@code ws}'s block counter. With {@code align} the routing block
   * then also groups the pairs by expert into {@code ws}, as {@link MoeKernels#moeAlign} does (for
   * {@link MoeKernels#moeExpertPairs} with {@code aligned}): one launch fewer.
   */
  public void routerRoute(
      CudaStream s,
      MoeWorkspace ws,
      long logits,
      long experts,
      long weights,
      long gate,
      long x,
      int k,
      long bias,
      int n,
      MoeRouting r,
      boolean align) {
    routerRoute(s, ws, logits, experts, weights, gate, x, k, bias, n, r, align, 0L);
  }

  /**
   * {@link #routerRoute(CudaStream, MoeWorkspace, long, long, long, long, long, int, long, int,
   * MoeRouting, boolean)} where the tokens at or past the device int at {@code liveTokens} (0:
   * none) are a graph bucket's padding rows: they route to no expert (ids -1, weights 0).
   */
  public void routerRoute(
      CudaStream s,
      MoeWorkspace ws,
      long logits,
      long experts,
      long weights,
      long gate,
      long x,
      int k,
      long bias,
      int n,
      MoeRouting r,
      boolean align,
      long liveTokens) {
    routerRoute.arg(0, logits).arg(1, experts).arg(2, weights).arg(3, ws.ticket.ptr());
    routerRoute.arg(4, gate).arg(5, x).arg(6, k).arg(7, n).arg(8, bias);
    r.bind(routerRoute, 9);
    routerRoute.arg(17, align ? ws.offsets.ptr() : 0L).arg(18, align ? ws.sortedPairs.ptr() : 0L);
    routerRoute.arg(19, align ? ws.activeExperts.ptr() : 0L);
    routerRoute.arg(20, align ? ws.activeCount.ptr() : 0L).arg(21, liveTokens);
    routerRoute.arg(22, gemvTokenGroup.getAsInt());
    // The routing block's threads are rm_moe_route's (same softmax sums); a warp per logit row.
    int threads = MoeKernels.routingThreads(r.numExperts());
    int warps = threads / 32;
    int blocks = (r.numExperts() + warps - 1) / warps;
    routerRoute.launch(s, blocks, 1, 1, threads, 12 * r.numExperts());
  }

  /**
   * {@code out[t] (+)= sum_j weights[t, j] * expert_{experts[t, j]}(x[t])} for {@code n} tokens
   * (pairs with a negative expert id skipped), with the SwiGLU experts of {@link
   * MoeKernels#moeExperts}; the intermediate goes through {@code ws}.
   */
  public void experts(
      CudaStream s,
      MoeWorkspace ws,
      long out,
      long x,
      long w13,
      long w2,
      long experts,
      long weights,
      int n,
      int hidden,
      int inter,
      boolean accumulate) {
    gateUp(s, ws, x, w13, experts, n, hidden, inter);
    downSum(s, ws, out, w2, experts, weights, n, hidden, inter, accumulate);
  }

  /** The first launch of {@link #experts}: the SwiGLU intermediate of every routed pair into ws. */
  public void gateUp(
      CudaStream s, MoeWorkspace ws, long x, long w13, long experts, int n, int hidden, int inter) {
    if (n > ws.maxTokens) {
      throw new IllegalArgumentException(n + " tokens exceed the workspace's " + ws.maxTokens);
    }
    gateUpPairs.arg(0, ws.h.ptr()).arg(1, w13).arg(2, x).arg(3, experts).arg(4, hidden);
    gateUpPairs.arg(5, inter).arg(6, ws.topK).launch(s, (inter + 3) / 4, n * ws.topK, 1, 128, 0);
  }

  /**
   * The second launch of {@link #experts}: the down projections of the intermediate {@code ws}
   * holds, summed per token into {@code out}. Separate so that a caller can join another stream's
   * writes to {@code out} between the two.
   */
  public void downSum(
      CudaStream s,
      MoeWorkspace ws,
      long out,
      long w2,
      long experts,
      long weights,
      int n,
      int hidden,
      int inter,
      boolean accumulate) {
    downSum.arg(0, out).arg(1, w2).arg(2, ws.h.ptr()).arg(3, experts).arg(4, weights);
    downSum.arg(5, n).arg(6, hidden).arg(7, inter).arg(8, ws.topK).arg(9, accumulate ? 1 : 0);
    downSum.launch(s, (hidden + 3) / 4, 1, 1, 128, 0);
  }
}
