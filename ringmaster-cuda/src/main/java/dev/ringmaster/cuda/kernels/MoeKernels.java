package dev.ringmaster.cuda.kernels;

import static dev.ringmaster.cuda.kernels.RingmasterKernels.blocks;
import static dev.ringmaster.cuda.kernels.RingmasterKernels.oneTwoOrFour;

import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.Kernel;
import dev.ringmaster.runtime.KernelTuning;
import java.util.function.BiFunction;

/**
 * Typed launches of the MoE kernels: routing, the routed experts (CUDA-core and tensor-core
 * variants, chosen per call by the token count), the pair-wise expert rows expert-parallel ranks
 * exchange, and the weighted combine (optionally fused with the next RMSNorm). Part of {@link
 * RingmasterKernels}, which loads them; use from the GPU's thread only.
 */
public final class MoeKernels {
  /** MoE routing: scores by softmax. */
  public static final int SCORING_SOFTMAX = 0;

  /** MoE routing: scores by sigmoid. */
  public static final int SCORING_SIGMOID = 1;

  /** MoE routing: plain top-k. */
  public static final int SELECT_GREEDY = 0;

  /** MoE routing: DeepSeek-V2 group_limited_greedy. */
  public static final int SELECT_GROUP_LIMITED = 1;

  /** MoE routing: DeepSeek-V3 noaux_tc. */
  public static final int SELECT_NOAUX_TC = 2;

  /**
   * Fewest tokens for which {@link #moeExperts} runs the tensor-core expert kernels instead of the
   * CUDA-core ones. A lone token is the CUDA-core kernels' best case (16 loads of 16 bytes in
   * flight per lane, f32 activations: ~2.5 TB/s on an H200), while the tensor-core kernels would
   * have one block per SM at most and round the activations to bf16. The CUDA-core passes over 2-8
   * tokens keep fewer loads in flight (1.8 TB/s at batch 32, 2-5 tokens per active expert; 2.9 TB/s
   * at batch 8), where the tensor-core kernels, whose bytes in flight do not depend on the token
   * count, should stream at 3.5 TB/s or more. 8 is the first captured batch size where that is
   * expected to hold; KernelBench's batch 1 and 4 rows place it. The default of the kernel option
   * {@code moe-mma-min-tokens}; {@link #setMoeMmaMinTokens} changes it for benchmarks and tests.
   */
  public static final int MOE_MMA_MIN_TOKENS = 8;

  /** Tokens per weight pass of the decode tensor-core expert kernels (kMoeMmaPassTokens). */
  public static final int MOE_MMA_PASS_TOKENS = 32;

  /** Tokens per weight pass of the large-batch tensor-core expert kernels (the *64 kernels). */
  public static final int MOE_MMA_WIDE_PASS_TOKENS = 64;

  /**
   * Fewest routed pairs per expert on average ({@code n * topK / numExperts}) for which {@link
   * #moeExpertsMma} takes the 64-token passes. The 32-token kernels stream an expert's weights once
   * per 32 of its tokens; the 64-token ones halve that for experts of more than 32 tokens but hold
   * twice the accumulators (2 blocks per SM instead of 3 on an H200). At 48 on average (batch 512
   * for 64 experts top-6) the per-expert counts (binomial, sd ~7) put almost every expert past 32,
   * i.e. two 32-token passes against one of 64, a margin the lower occupancy cannot eat; below
   * about 32 most experts fit one 32-token pass, where the 64-token kernels run the same code at
   * lower occupancy. Decode batches (up to a few hundred tokens) stay on the 32-token kernels.
   * Results are bit-identical either way, so the choice never changes a token's output.
   */
  public static final int MOE_MMA_WIDE_PAIRS_PER_EXPERT = 48;

  /**
   * Tokens per weight pass of the narrow FP8 tensor-core expert kernels (the *mma8_fp8 kernels).
   */
  public static final int MOE_MMA_FP8_NARROW_PASS_TOKENS = 8;

  /**
   * Most routed pairs per expert on average ({@code n * topK / numExperts}) for which {@link
   * #moeExpertPairsFp8} takes the 8-token passes. Those kernels hold one token tile of accumulators
   * (128 registers on sm_90: 4 blocks per SM) where the 32-token ones hold four (238-248 registers:
   * 2 blocks), so they keep twice the weight bytes in flight per SM; an expert of more than 8
   * tokens streams its weights once more per 8. At 6 on average (V2-Lite batch 64) the per-expert
   * counts (binomial, sd ~2.4) leave about one expert in eight past 8 tokens, against the halved
   * occupancy of the 32-token kernels for every expert. Results are bit-identical either way.
   */
  public static final int MOE_MMA_FP8_NARROW_PAIRS_PER_EXPERT = 6;

  /** Output rows per block of the tensor-core expert kernels (kMoeMmaRowsPerBlock). */
  private static final int MMA_ROWS_PER_BLOCK = 64;

  /** Threads per block of the tensor-core expert kernels (kMoeMmaThreads). */
  private static final int MMA_THREADS = 128;

  private final Kernel route;
  private final Kernel moeAlign;
  private final Kernel moeGateUp;
  private final Kernel moeDown;
  private final Kernel moeDownR2;
  private final Kernel moeDownR4;
  private int moeDownRowsPerWarp;
  private final Kernel moeCombine;
  private final Kernel moeCombineRmsNorm;
  private final Kernel moeGather;
  private final Kernel moeScatter;
  private final Kernel moeGateUpMma;
  private final Kernel moeDownMma;
  private final Kernel moeGateUpMma64;
  private final Kernel moeDownMma64;
  private final Kernel moeGateUpFp8;
  private final Kernel moeDownFp8;
  private final Kernel moeGateUpMmaFp8;
  private final Kernel moeDownMmaFp8;
  private final Kernel moeGateUpMma8Fp8;
  private final Kernel moeDownMma8Fp8;
  private final Kernel moeGateUp1Fp8;
  private final Kernel moeDown1Fp8;
  private final Kernel moeGateUp1Fp8WeightsFirst;
  private final Kernel moeDown1Fp8WeightsFirst;
  private boolean oneTokenFp8;
  private boolean oneTokenFp8WeightsFirst;
  private int moeMmaMinTokens;
  private int quantMoeMmaMinTokens;

  /** Intermediate rows per warp of {@code rm_moe_gate_up1_fp8} (kQ1Fp8GateUpCols). */
  private static final int FP8_GATE_UP1_ROWS_PER_WARP = 2;

  /** Output rows per warp of {@code rm_moe_down1_fp8} (kQ1Fp8DownRows). */
  private static final int FP8_DOWN1_ROWS_PER_WARP = 4;

  /** Shared-expert output rows per warp of {@code rm_moe_down1_fp8} (kQ1Fp8SharedDownRows). */
  private static final int FP8_SHARED_DOWN1_ROWS_PER_WARP = 2;

  MoeKernels(BiFunction<String, Integer, Kernel> kernel, KernelTuning tuning) {
    route = kernel.apply("rm_moe_route", 13);
    moeAlign = kernel.apply("rm_moe_align", 7);
    moeGateUp = kernel.apply("rm_moe_gate_up", 10);
    moeDown = kernel.apply("rm_moe_down", 10);
    moeDownR2 = kernel.apply("rm_moe_down_r2", 10);
    moeDownR4 = kernel.apply("rm_moe_down_r4", 10);
    useMoeDownRowsPerWarp(tuning.moeDownRowsPerWarp());
    moeCombine = kernel.apply("rm_moe_combine", 6);
    moeCombineRmsNorm = kernel.apply("rm_moe_combine_rmsnorm", 8);
    moeGather = kernel.apply("rm_moe_gather_bf16", 5);
    moeScatter = kernel.apply("rm_moe_scatter_weighted", 5);
    moeGateUpMma = kernel.apply("rm_moe_gate_up_mma", 10);
    moeDownMma = kernel.apply("rm_moe_down_mma", 10);
    moeGateUpMma64 = kernel.apply("rm_moe_gate_up_mma64", 10);
    moeDownMma64 = kernel.apply("rm_moe_down_mma64", 10);
    moeGateUpFp8 = kernel.apply("rm_moe_gate_up_fp8", 11);
    moeDownFp8 = kernel.apply("rm_moe_down_fp8", 11);
    moeGateUpMmaFp8 = kernel.apply("rm_moe_gate_up_mma_fp8", 11);
    moeDownMmaFp8 = kernel.apply("rm_moe_down_mma_fp8", 11);
    moeGateUpMma8Fp8 = kernel.apply("rm_moe_gate_up_mma8_fp8", 11);
    moeDownMma8Fp8 = kernel.apply("rm_moe_down_mma8_fp8", 11);
    moeGateUp1Fp8 = kernel.apply("rm_moe_gate_up1_fp8", 16);
    moeDown1Fp8 = kernel.apply("rm_moe_down1_fp8", 18);
    moeGateUp1Fp8WeightsFirst = kernel.apply("rm_moe_gate_up1_fp8_wf", 16);
    moeDown1Fp8WeightsFirst = kernel.apply("rm_moe_down1_fp8_wf", 18);
    oneTokenFp8 = tuning.quantOneToken();
    oneTokenFp8WeightsFirst = tuning.quantWeightsFirst();
    setMoeMmaMinTokens(tuning.moeMmaMinTokens());
    quantMoeMmaMinTokens = tuning.quantMoeMmaMinTokens();
  }

  /**
   * Routes {@code n} tokens from their router logits {@code [n, E]} (f32) to {@code experts [n,
   * topK]} (i32) and {@code weights [n, topK]} (f32); {@code bias} 0 when there is none.
   */
  public void moeRoute(
      CudaStream s, long experts, long weights, long logits, long bias, int n, MoeRouting r) {
    moeRoute(s, experts, weights, logits, bias, n, r, 0L);
  }

  /**
   * {@link #moeRoute(CudaStream, long, long, long, long, int, MoeRouting)} where the tokens at or
   * past the device int at {@code liveTokens} (0: none) are a graph bucket's padding rows: they
   * route to no expert (ids -1, weights 0).
   */
  public void moeRoute(
      CudaStream s,
      long experts,
      long weights,
      long logits,
      long bias,
      int n,
      MoeRouting r,
      long liveTokens) {
    route.arg(0, experts).arg(1, weights).arg(2, logits).arg(3, bias).arg(12, liveTokens);
    r.bind(route, 4);
    route.launch(s, n, 1, 1, routingThreads(r.numExperts()), 12 * r.numExperts());
  }

  /**
   * Rejects routings the routing kernel cannot hold: at most 64 equal groups, at most 64 experts
   * per token.
   */
  static void checkRouting(int numExperts, int topK, int numGroups) {
    if (numGroups > 64 || numExperts % Math.max(numGroups, 1) != 0) {
      throw new IllegalArgumentException(numGroups + " groups of " + numExperts + " experts");
    }
    if (topK < 1 || topK > 64 || topK > numExperts) {
      throw new IllegalArgumentException("top-" + topK + " of " + numExperts + " experts");
    }
  }

  /**
   * Threads of a block that routes a token: the experts rounded up to a warp, at most 256. The
   * softmax sums depend on it, so every routing launch uses the same count.
   */
  static int routingThreads(int numExperts) {
    return Math.min(256, (numExperts + 31) / 32 * 32);
  }

  /** Fewest tokens for which {@link #moeExperts} takes the tensor-core kernels. */
  public int moeMmaMinTokens() {
    return moeMmaMinTokens;
  }

  /**
   * Sets the fewest tokens for which {@link #moeExperts} takes the tensor-core kernels ({@code
   * Integer.MAX_VALUE}: never). Read at each call, so a graph captures the choice made then.
   */
  public void setMoeMmaMinTokens(int tokens) {
    if (tokens < 1) {
      throw new IllegalArgumentException("MoE mma threshold must be at least 1, got " + tokens);
    }
    moeMmaMinTokens = tokens;
  }

  /**
   * Whether the tensor-core expert kernels take this shape: every 16-byte load holds 8 values of
   * one row, so both reduction dimensions must be multiples of 8.
   */
  public static boolean moeMmaSupports(int hidden, int inter) {
    return hidden % 8 == 0 && inter % 8 == 0;
  }

  /**
   * The routed experts of one MoE layer for {@code n} tokens: {@code out[t] (+)= sum_j weight[t, j]
   * * expert_{experts[t, j]}(x[t])} with SwiGLU experts {@code w13 [E, 2*inter, hidden]} (gate rows
   * then up rows) and {@code w2 [E, hidden, inter]}, all bf16. Runs {@link #moeExpertsMma} from
   * {@link #moeMmaMinTokens()} tokens on (when the shape allows), else {@link #moeExpertsFused}.
   */
  public void moeExperts(
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
    if (moeUsesTensorCores(n, hidden, inter)) {
      moeExpertsMma(s, ws, out, x, w13, w2, experts, weights, n, hidden, inter, accumulate);
    } else {
      moeExpertsFused(s, ws, out, x, w13, w2, experts, weights, n, hidden, inter, accumulate);
    }
  }

  /**
   * Whether FP8 or NVFP4 routed experts of {@code n} tokens run their tensor-core kernels: from
   * {@code quant-moe-mma-min-tokens} tokens on (2 by default: at 2-4 tokens the CUDA-core passes
   * over the codes cost more than one tensor-core pass, unlike bf16's), where the shape allows.
   */
  public boolean quantizedMoeUsesTensorCores(int n, int hidden, int inter) {
    return n >= quantMoeMmaMinTokens && moeMmaSupports(hidden, inter);
  }

  /** Whether {@link #moeExperts} of {@code n} tokens runs the tensor-core kernels. */
  public boolean moeUsesTensorCores(int n, int hidden, int inter) {
    return n >= moeMmaMinTokens && moeMmaSupports(hidden, inter);
  }

  /**
   * The routed experts without the final sum: {@code y[p] = weights[p] * expert_{experts[p]}(x[p /
   * topK])} for the {@code n * topK} pairs, left in {@link MoeWorkspace#pairRowsPtr()}; pairs with
   * a negative expert id are skipped and their rows left as they were. {@code tensorCores} picks
   * the kernels (as {@link #moeUsesTensorCores} would for the caller's batch; needs {@link
   * #moeMmaSupports}). A pair's row is the one {@link #moeExperts} computes with the same kernels,
   * whatever the other pairs are (expert-parallel ranks rely on it).
   */
  public void moeExpertPairs(
      CudaStream s,
      MoeWorkspace ws,
      long x,
      long w13,
      long w2,
      long experts,
      long weights,
      int n,
      int hidden,
      int inter,
      boolean tensorCores) {
    moeExpertPairs(s, ws, x, w13, w2, experts, weights, n, hidden, inter, tensorCores, false);
  }

  /**
   * {@link #moeExpertPairs}; with {@code aligned}, {@code ws} already holds the pairs grouped by
   * expert for this routing ({@link SmallBatchMoe#routerRoute} with {@code align}), so the
   * CUDA-core kernels start without {@link #moeAlign}.
   */
  public void moeExpertPairs(
      CudaStream s,
      MoeWorkspace ws,
      long x,
      long w13,
      long w2,
      long experts,
      long weights,
      int n,
      int hidden,
      int inter,
      boolean tensorCores,
      boolean aligned) {
    if (tensorCores) {
      checkMma(hidden, inter);
      int passTokens = moeMmaPassTokens(n, ws.topK, ws.numExperts);
      mmaPairs(s, ws, x, w13, w2, experts, weights, n, hidden, inter, passTokens);
    } else {
      fusedPairs(s, ws, x, w13, w2, experts, weights, n, hidden, inter, aligned);
    }
  }

  /**
   * {@link #moeExperts} on the CUDA-core kernels: f32 activations throughout, each expert's weights
   * streamed once per 8 of its tokens (best for a single token).
   */
  public void moeExpertsFused(
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
    fusedPairs(s, ws, x, w13, w2, experts, weights, n, hidden, inter, false);
    moeCombine(s, out, ws.y.ptr(), n, hidden, ws.topK, accumulate);
  }

  private void fusedPairs(
      CudaStream s,
      MoeWorkspace ws,
      long x,
      long w13,
      long w2,
      long experts,
      long weights,
      int n,
      int hidden,
      int inter,
      boolean aligned) {
    int active =
        aligned ? Math.min(n * ws.topK, ws.numExperts) : moeAlignForExperts(s, ws, experts, n);
    moeGateUp.arg(0, ws.h.ptr()).arg(1, w13).arg(2, x).arg(3, ws.offsets.ptr());
    moeGateUp.arg(4, ws.sortedPairs.ptr()).arg(5, ws.activeExperts.ptr());
    moeGateUp.arg(6, ws.activeCount.ptr()).arg(7, hidden).arg(8, inter).arg(9, ws.topK);
    moeGateUp.launch(s, blocks(inter, 4), active, 1, 128, 0);
    moeDown(s, ws, w2, weights, n, hidden, inter);
  }

  /**
   * {@link #moeExpertPairs} for FP8 block-scaled experts: {@code w13} e4m3 {@code [E, 2 * inter,
   * hidden]} with scales {@code s13} (parts of {@code inter} rows: each expert's gate, then its up
   * projection), {@code w2} e4m3 {@code [E, hidden, inter]} with scales {@code s2} (parts of {@code
   * hidden} rows). With {@code tensorCores} (needs {@link #moeMmaSupports}) the tensor-core kernels
   * ({@code fp8_moe_mma.cu}: passes of up to {@link #moeMmaFp8PassTokens} tokens, activations and
   * the intermediate rounded to bf16, codes decoded exactly), else the CUDA-core ones (f32
   * activations, each expert's rows streamed once per 8 of its pairs; one token: {@link
   * #useOneTokenFp8Experts}). The pairs' rows are left in {@link MoeWorkspace#pairRowsPtr()}; with
   * {@code aligned} (CUDA-core kernels only), {@code ws} already holds them grouped.
   */
  public void moeExpertPairsFp8(
      CudaStream s,
      MoeWorkspace ws,
      long x,
      long w13,
      long s13,
      long w2,
      long s2,
      long experts,
      long weights,
      int n,
      int hidden,
      int inter,
      boolean tensorCores,
      boolean aligned) {
    moeExpertPairsFp8(
        s,
        ws,
        x,
        w13,
        s13,
        w2,
        s2,
        experts,
        weights,
        n,
        hidden,
        inter,
        tensorCores,
        aligned,
        fp8PassTokens(ws, n, tensorCores));
  }

  /**
   * The pass size {@link #moeExpertPairsFp8} chooses for {@code n} tokens of {@code ws}: {@link
   * #moeMmaFp8PassTokens} on tensor cores, else {@link #MOE_MMA_PASS_TOKENS} (which the CUDA-core
   * kernels ignore).
   */
  public static int fp8PassTokens(MoeWorkspace ws, int n, boolean tensorCores) {
    return tensorCores ? moeMmaFp8PassTokens(n, ws.topK, ws.numExperts) : MOE_MMA_PASS_TOKENS;
  }

  /**
   * Tokens per weight pass of the FP8 tensor-core experts for {@code n} tokens: {@link
   * #MOE_MMA_FP8_NARROW_PASS_TOKENS} up to {@link #MOE_MMA_FP8_NARROW_PAIRS_PER_EXPERT} routed
   * pairs per expert on average, else {@link #MOE_MMA_PASS_TOKENS}.
   */
  public static int moeMmaFp8PassTokens(int n, int topK, int numExperts) {
    return (long) n * topK <= (long) MOE_MMA_FP8_NARROW_PAIRS_PER_EXPERT * numExperts
        ? MOE_MMA_FP8_NARROW_PASS_TOKENS
        : MOE_MMA_PASS_TOKENS;
  }

  /**
   * {@link #moeExpertPairsFp8} with the tensor-core pass size chosen by the caller: {@link
   * #MOE_MMA_FP8_NARROW_PASS_TOKENS} or {@link #MOE_MMA_PASS_TOKENS} (tests and benchmarks compare
   * the two; the CUDA-core kernels ignore it).
   */
  public void moeExpertPairsFp8(
      CudaStream s,
      MoeWorkspace ws,
      long x,
      long w13,
      long s13,
      long w2,
      long s2,
      long experts,
      long weights,
      int n,
      int hidden,
      int inter,
      boolean tensorCores,
      boolean aligned,
      int passTokens) {
    moeExpertPairsFp8(
        s,
        ws,
        x,
        w13,
        s13,
        w2,
        s2,
        experts,
        weights,
        n,
        hidden,
        inter,
        tensorCores,
        aligned,
        passTokens,
        null);
  }

  /**
   * A MoE layer's FP8 shared experts for {@link #moeExpertPairsFp8} to run inside the one-token
   * expert launches: the gate|up matrix {@code gateUp} e4m3 {@code [2 * inter, hidden]} with scales
   * {@code gateUpScales} (parts of {@code inter} rows), the down matrix {@code down} e4m3 {@code
   * [hidden, inter]} with scales {@code downScales} (parts of {@code downPartRows} rows), the
   * intermediate {@code act} (f32 {@code [inter]}) and the output {@code out} (f32 {@code
   * [hidden]}).
   */
  public record Fp8SharedExperts(
      long gateUp,
      long gateUpScales,
      int inter,
      long act,
      long down,
      long downScales,
      int downPartRows,
      long out) {}

  /**
   * Whether {@link #moeExpertPairsFp8} of {@code n} tokens can take the shared experts ({@link
   * Fp8SharedExperts}): a lone token on the one-token CUDA-core kernels.
   */
  public boolean takesFp8SharedExperts(int n, boolean tensorCores) {
    return n == 1 && !tensorCores && oneTokenFp8;
  }

  /**
   * {@link #moeExpertPairsFp8}; with {@code shared} (non-null only where {@link
   * #takesFp8SharedExperts}) the shared experts run as the first grid rows of the two one-token
   * launches: {@code shared.act()} gets what {@code rm_gemv_swiglu1_fp8} writes, {@code
   * shared.out()} what {@code rm_gemv1_fp8} of the down matrix writes, bit for bit, with no launch
   * or stream of their own.
   */
  public void moeExpertPairsFp8(
      CudaStream s,
      MoeWorkspace ws,
      long x,
      long w13,
      long s13,
      long w2,
      long s2,
      long experts,
      long weights,
      int n,
      int hidden,
      int inter,
      boolean tensorCores,
      boolean aligned,
      int passTokens,
      Fp8SharedExperts shared) {
    if (shared != null && !takesFp8SharedExperts(n, tensorCores)) {
      throw new IllegalArgumentException(
          "shared experts inside the expert launches need one token on the one-token kernels, got "
              + n
              + " tokens"
              + (tensorCores ? " on tensor cores" : ""));
    }
    if (tensorCores) {
      checkMma(hidden, inter);
      if (aligned) {
        throw new IllegalArgumentException("the tensor-core experts align the pairs themselves");
      }
    }
    if (passTokens != MOE_MMA_FP8_NARROW_PASS_TOKENS && passTokens != MOE_MMA_PASS_TOKENS) {
      throw new IllegalArgumentException(
          "FP8 tensor-core expert passes are of "
              + MOE_MMA_FP8_NARROW_PASS_TOKENS
              + " or "
              + MOE_MMA_PASS_TOKENS
              + " tokens, got "
              + passTokens);
    }
    int active =
        aligned ? Math.min(n * ws.topK, ws.numExperts) : moeAlignForExperts(s, ws, experts, n);
    boolean narrow = passTokens == MOE_MMA_FP8_NARROW_PASS_TOKENS;
    boolean one = !tensorCores && n == 1 && oneTokenFp8;
    boolean first = one && oneTokenFp8WeightsFirst;
    Kernel gateUp =
        tensorCores
            ? (narrow ? moeGateUpMma8Fp8 : moeGateUpMmaFp8)
            : one ? (first ? moeGateUp1Fp8WeightsFirst : moeGateUp1Fp8) : moeGateUpFp8;
    Kernel down =
        tensorCores
            ? (narrow ? moeDownMma8Fp8 : moeDownMmaFp8)
            : one ? (first ? moeDown1Fp8WeightsFirst : moeDown1Fp8) : moeDownFp8;
    int rowsPerBlock = tensorCores ? MMA_ROWS_PER_BLOCK : 4;
    int threads = tensorCores ? MMA_THREADS : 128;
    int gateUpRows = one ? 4 * FP8_GATE_UP1_ROWS_PER_WARP : rowsPerBlock;
    int downRows = one ? 4 * FP8_DOWN1_ROWS_PER_WARP : rowsPerBlock;
    int gateUpBlocks = blocks(inter, gateUpRows);
    int downBlocks = blocks(hidden, downRows);
    // The shared experts' grid rows: as many as hold the blocks their separate kernels would have.
    int gateUpSharedY = 0;
    int downSharedY = 0;
    gateUp.arg(0, ws.h.ptr()).arg(1, w13).arg(2, s13).arg(3, x).arg(4, ws.offsets.ptr());
    gateUp.arg(5, ws.sortedPairs.ptr()).arg(6, ws.activeExperts.ptr());
    gateUp.arg(7, ws.activeCount.ptr()).arg(8, hidden).arg(9, inter).arg(10, ws.topK);
    down.arg(0, ws.y.ptr()).arg(1, w2).arg(2, s2).arg(3, ws.h.ptr()).arg(4, weights);
    down.arg(5, ws.offsets.ptr()).arg(6, ws.sortedPairs.ptr());
    down.arg(7, ws.activeExperts.ptr()).arg(8, ws.activeCount.ptr());
    down.arg(9, hidden).arg(10, inter);
    if (one) {
      if (shared != null) {
        gateUpSharedY = blocks(blocks(shared.inter(), gateUpRows), gateUpBlocks);
        downSharedY = blocks(blocks(hidden, 4 * FP8_SHARED_DOWN1_ROWS_PER_WARP), downBlocks);
      }
      gateUp.arg(11, shared == null ? 0L : shared.act());
      gateUp.arg(12, shared == null ? 0L : shared.gateUp());
      gateUp.arg(13, shared == null ? 0L : shared.gateUpScales());
      gateUp.arg(14, shared == null ? 1 : shared.inter()).arg(15, gateUpSharedY);
      down.arg(11, shared == null ? 0L : shared.out());
      down.arg(12, shared == null ? 0L : shared.down());
      down.arg(13, shared == null ? 0L : shared.downScales());
      down.arg(14, shared == null ? 1 : shared.downPartRows());
      down.arg(15, shared == null ? 0L : shared.act());
      down.arg(16, shared == null ? 1 : shared.inter()).arg(17, downSharedY);
    }
    gateUp.launch(s, gateUpBlocks, gateUpSharedY + active, 1, threads, 0);
    down.launch(s, downBlocks, downSharedY + active, 1, threads, 0);
  }

  /**
   * Whether a lone token's CUDA-core FP8 experts ({@link #moeExpertPairsFp8}) run the one-token
   * kernels ({@code rm_moe_gate_up1_fp8} / {@code rm_moe_down1_fp8}: 2 intermediate rows and 4
   * output rows a warp) instead of the general ones; bit for bit the same rows. Read at each
   * launch; the kernel option {@code quant-one-token} sets it. For benchmarks and tests.
   */
  public void useOneTokenFp8Experts(boolean on) {
    oneTokenFp8 = on;
  }

  /** Whether a lone token's FP8 experts take the one-token kernels. */
  public boolean oneTokenFp8Experts() {
    return oneTokenFp8;
  }

  /**
   * Whether the shared experts' blocks of the one-token FP8 expert launches ({@link
   * Fp8SharedExperts}) issue their weight loads before the programmatic-launch wait ({@code
   * rm_moe_gate_up1_fp8_wf}, {@code rm_moe_down1_fp8_wf}); the same bits. Read at each launch; the
   * kernel option {@code quant-weights-first} sets it. For benchmarks and tests.
   */
  public void useOneTokenFp8WeightsFirst(boolean on) {
    oneTokenFp8WeightsFirst = on;
  }

  /**
   * The down projection of {@link #moeExpertsFused} alone: {@code y[p] = weights[p] * W2[e] h[p]}
   * into {@link MoeWorkspace#pairRowsPtr()} for the pairs of {@code n} tokens that {@code ws} holds
   * aligned by expert, with their intermediate rows, from an earlier run of the same routing. With
   * {@link #useMoeDownRowsPerWarp}'s choice of kernel. Public so that benchmarks can time it alone.
   */
  public void moeDown(
      CudaStream s, MoeWorkspace ws, long w2, long weights, int n, int hidden, int inter) {
    int rows = moeDownRowsPerWarp;
    Kernel f = rows == 1 ? moeDown : rows == 2 ? moeDownR2 : moeDownR4;
    f.arg(0, ws.y.ptr()).arg(1, w2).arg(2, ws.h.ptr()).arg(3, weights);
    f.arg(4, ws.offsets.ptr()).arg(5, ws.sortedPairs.ptr()).arg(6, ws.activeExperts.ptr());
    f.arg(7, ws.activeCount.ptr()).arg(8, hidden).arg(9, inter);
    f.launch(
        s, blocks((hidden + rows - 1) / rows, 4), Math.min(n * ws.topK, ws.numExperts), 1, 128, 0);
  }

  /**
   * Output rows per warp of the CUDA-core down projection ({@link #moeExpertsFused}, {@link
   * #moeDown}): 1, 2 or 4 (default). A warp streams that many rows of its expert at once, in a grid
   * that many times smaller; the outputs are bit-identical whichever is chosen. On an H200 4 rows
   * took V2-Lite's batch-1 down projection from 13.7 to 12.0 us (batch 4: 42.2 to 34.3 us). Read at
   * each launch, so a graph captures the choice made then; the constructor's tuning sets it ({@code
   * moe-down-rows-per-warp}). For benchmarks and tests.
   */
  public void useMoeDownRowsPerWarp(int rows) {
    moeDownRowsPerWarp = oneTwoOrFour("MoE down rows per warp", rows);
  }

  /** Output rows per warp of the CUDA-core down projection (1, 2 or 4). */
  public int moeDownRowsPerWarp() {
    return moeDownRowsPerWarp;
  }

  /**
   * Tokens per weight pass that {@link #moeExpertsMma} uses for {@code n} tokens: {@link
   * #MOE_MMA_WIDE_PASS_TOKENS} from {@link #MOE_MMA_WIDE_PAIRS_PER_EXPERT} routed pairs per expert
   * on average, else {@link #MOE_MMA_PASS_TOKENS}.
   */
  public static int moeMmaPassTokens(int n, int topK, int numExperts) {
    return (long) n * topK >= (long) MOE_MMA_WIDE_PAIRS_PER_EXPERT * numExperts
        ? MOE_MMA_WIDE_PASS_TOKENS
        : MOE_MMA_PASS_TOKENS;
  }

  /**
   * {@link #moeExperts} on the tensor-core kernels ({@code moe_mma.cu}): each active expert's
   * weights streamed once per 32 of its tokens, or per 64 for large batches ({@link
   * #moeMmaPassTokens}), inputs and the SwiGLU intermediate rounded to bf16, f32 accumulation. A
   * pair's result does not depend on the other tokens of the batch, nor on the pass size. Needs
   * {@link #moeMmaSupports}.
   */
  public void moeExpertsMma(
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
    int passTokens = moeMmaPassTokens(n, ws.topK, ws.numExperts);
    moeExpertsMma(
        s, ws, out, x, w13, w2, experts, weights, n, hidden, inter, accumulate, passTokens);
  }

  /**
   * {@link #moeExpertsMma} with the pass size chosen by the caller: {@link #MOE_MMA_PASS_TOKENS} or
   * {@link #MOE_MMA_WIDE_PASS_TOKENS} (tests and benchmarks compare the two).
   */
  public void moeExpertsMma(
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
      boolean accumulate,
      int passTokens) {
    checkMma(hidden, inter);
    mmaPairs(s, ws, x, w13, w2, experts, weights, n, hidden, inter, passTokens);
    moeCombine(s, out, ws.y.ptr(), n, hidden, ws.topK, accumulate);
  }

  private static void checkMma(int hidden, int inter) {
    if (!moeMmaSupports(hidden, inter)) {
      throw new IllegalArgumentException(
          "tensor-core experts need hidden and inter multiples of 8, got " + hidden + ", " + inter);
    }
  }

  private void mmaPairs(
      CudaStream s,
      MoeWorkspace ws,
      long x,
      long w13,
      long w2,
      long experts,
      long weights,
      int n,
      int hidden,
      int inter,
      int passTokens) {
    if (passTokens != MOE_MMA_PASS_TOKENS && passTokens != MOE_MMA_WIDE_PASS_TOKENS) {
      throw new IllegalArgumentException("MoE mma passes of 32 or 64 tokens, got " + passTokens);
    }
    int active = moeAlignForExperts(s, ws, experts, n);
    // ws.h holds the intermediate as bf16 rows in expert-sorted pair order (half its f32 size).
    boolean wide = passTokens == MOE_MMA_WIDE_PASS_TOKENS;
    Kernel gateUp = wide ? moeGateUpMma64 : moeGateUpMma;
    Kernel down = wide ? moeDownMma64 : moeDownMma;
    gateUp.arg(0, ws.h.ptr()).arg(1, w13).arg(2, x).arg(3, ws.offsets.ptr());
    gateUp.arg(4, ws.sortedPairs.ptr()).arg(5, ws.activeExperts.ptr());
    gateUp.arg(6, ws.activeCount.ptr()).arg(7, hidden).arg(8, inter).arg(9, ws.topK);
    gateUp.launch(s, blocks(inter, MMA_ROWS_PER_BLOCK), active, 1, MMA_THREADS, 0);
    down.arg(0, ws.y.ptr()).arg(1, w2).arg(2, ws.h.ptr()).arg(3, weights);
    down.arg(4, ws.offsets.ptr()).arg(5, ws.sortedPairs.ptr());
    down.arg(6, ws.activeExperts.ptr()).arg(7, ws.activeCount.ptr());
    down.arg(8, hidden).arg(9, inter);
    down.launch(s, blocks(hidden, MMA_ROWS_PER_BLOCK), active, 1, MMA_THREADS, 0);
  }

  /**
   * Aligns the pairs and returns the experts' grid height: at most min(pairs, E) experts are
   * active, known without reading the routing back (graph-capturable).
   */
  private int moeAlignForExperts(CudaStream s, MoeWorkspace ws, long experts, int n) {
    moeAlign(s, ws, experts, n);
    return Math.min(n * ws.topK, ws.numExperts);
  }

  /**
   * Groups the {@code n * topK} routed pairs by expert into {@code ws} ({@link
   * MoeWorkspace#offsetsPtr()}, {@link MoeWorkspace#sortedPairsPtr()}), as the first step of the
   * grouped-GEMM path.
   */
  public void moeAlign(CudaStream s, MoeWorkspace ws, long experts, int n) {
    if (n > ws.maxTokens) {
      throw new IllegalArgumentException(n + " tokens exceed the workspace's " + ws.maxTokens);
    }
    int e = ws.numExperts;
    moeAlign.arg(0, ws.offsets.ptr()).arg(1, ws.sortedPairs.ptr()).arg(2, ws.activeExperts.ptr());
    moeAlign.arg(3, ws.activeCount.ptr()).arg(4, experts).arg(5, n * ws.topK).arg(6, e);
    moeAlign.launch(s, 1, 1, 1, 1024, 8 * e);
  }

  /** {@code xs[q] = bf16(x[sortedPairs[q] / topK])} for {@code pairs} sorted pairs. */
  public void moeGatherBf16(
      CudaStream s, long xs, long x, long sortedPairs, int pairs, int topK, int hidden) {
    moeGather.arg(0, xs).arg(1, x).arg(2, sortedPairs).arg(3, topK).arg(4, hidden);
    moeGather.launch(s, pairs, 1, 1, 256, 0);
  }

  /** {@code y[p] = weights[p] * ys[q]} with {@code p = sortedPairs[q]}, for {@code pairs} pairs. */
  public void moeScatterWeighted(
      CudaStream s, long y, long ys, long sortedPairs, long weights, int pairs, int hidden) {
    moeScatter.arg(0, y).arg(1, ys).arg(2, sortedPairs).arg(3, weights).arg(4, hidden);
    moeScatter.launch(s, pairs, 1, 1, 256, 0);
  }

  /** {@code out[t] (+)= sum over slots of y[t*topK + slot]} for {@code n} tokens. */
  public void moeCombine(
      CudaStream s, long out, long y, int n, int hidden, int topK, boolean accumulate) {
    moeCombine.arg(0, out).arg(1, y).arg(2, n).arg(3, hidden).arg(4, topK);
    moeCombine.arg(5, accumulate ? 1 : 0).launch(s, blocks((long) n * hidden, 256), 1, 1, 256, 0);
  }

  /**
   * {@link #moeCombine} followed by {@link RingmasterKernels#rmsNorm} with the residual, in one
   * launch and with the same bits: for each of {@code n} rows of {@code dim}, {@code s = shared +
   * y[slot 0] + ... + y[slot topK - 1]} ({@code shared} 0: none), {@code residual += s}, {@code out
   * = weight * rmsnorm(residual)}. The combined row itself is not stored.
   */
  public void moeCombineRmsNorm(
      CudaStream s,
      long out,
      long residual,
      long shared,
      long y,
      int topK,
      long weight,
      int n,
      int dim,
      float eps) {
    moeCombineRmsNorm.arg(0, out).arg(1, residual).arg(2, shared).arg(3, y).arg(4, topK);
    moeCombineRmsNorm.arg(5, weight).arg(6, dim).arg(7, eps).launch(s, n, 1, 1, 256, 0);
  }
}
