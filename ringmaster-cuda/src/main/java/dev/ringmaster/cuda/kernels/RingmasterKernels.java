package dev.ringmaster.cuda.kernels;

import dev.ringmaster.cuda.driver.CudaDriver;
import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.Kernel;
import dev.ringmaster.runtime.KernelTuning;
import java.util.ArrayList;
import java.util.List;

/**
 * Typed launches of the kernels in {@code src/main/cuda}: the Java side of each {@code extern "C"}
 * signature, with the grid and block each kernel's documented thread mapping expects. All pointers
 * are device pointers ({@code long}); weights bf16, activations f32. Load once per context, use
 * from the GPU's thread only.
 */
public final class RingmasterKernels implements AutoCloseable {
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

  /** Output rows per block of the tensor-core expert kernels (kMoeMmaRowsPerBlock). */
  private static final int MMA_ROWS_PER_BLOCK = 64;

  /** Threads per block of the tensor-core expert kernels (kMoeMmaThreads). */
  private static final int MMA_THREADS = 128;

  private final CudaDriver driver;
  private final long module;
  private final Kernel embedding;
  private final Kernel siluMul;
  private final Kernel toBf16;
  private final Kernel addBias;
  private final Kernel rmsNorm;
  private final Kernel rope;
  private final Kernel gemv;
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
  private int moeMmaMinTokens;
  private final Kernel mlaAbsorbQ;
  private final Kernel mlaOutV;
  private final Kernel mlaAppend;
  private final Kernel mlaKvRopeAppend;
  private final Kernel gemv2;
  private final Kernel gemv1R2;
  private final Kernel gemv1R4;
  private final Kernel gemv1SplitK2;
  private final Kernel gemv1SplitK4;
  private int gemvRowsPerWarp;
  private int gemvSplitK;
  private final Kernel gemvSwiglu;
  private final Kernel mlaSplit;
  private final Kernel mlaCombine;
  private final Kernel mlaSplitMma;
  private final Kernel mlaSplitMma2;
  private final Kernel mlaGatherCtx;
  private final Kernel mlaPrefillSoftmax;
  private boolean mlaTensorCores;
  private int mlaStages;
  // Per cache-tile stage count (index 1 or 2): the shared memory granted / refused so far.
  private final int[] mmaSharedGranted = new int[3];
  private final int[] mmaSharedRefused = {0, Integer.MAX_VALUE, Integer.MAX_VALUE};
  private final Kernel argmax;
  private final List<Kernel> all = new ArrayList<>();
  private final SmallBatchMoe smallBatchMoe;
  private final MlaFusedDecode mlaFusedDecode;
  private final GqaAttention gqaAttention;
  private final DeviceSampler deviceSampler;

  /** Loads the fatbin into the current context, with the default kernel choices. */
  public RingmasterKernels() {
    this(KernelTuning.defaults());
  }

  /**
   * Loads the fatbin into the current context; {@code tuning} gives the kernel variants ({@code
   * pdl}, {@code mla-tensor-cores}, {@code mla-stages}, {@code moe-mma-min-tokens}, {@code
   * moe-down-rows-per-warp}, {@code gemv-rows-per-warp}, {@code gemv-split-k}).
   */
  public RingmasterKernels(KernelTuning tuning) {
    driver = CudaDriver.get();
    module = KernelImage.loadModule(driver);
    embedding = kernel("rm_embedding_bf16", 4);
    siluMul = kernel("rm_silu_mul", 7);
    toBf16 = kernel("rm_f32_to_bf16", 3);
    addBias = kernel("rm_add_bias", 4);
    rmsNorm = kernel("rm_rmsnorm", 9);
    rope = kernel("rm_rope", 9);
    gemv = kernel("rm_gemv_bf16", 6);
    route = kernel("rm_moe_route", 12);
    moeAlign = kernel("rm_moe_align", 7);
    moeGateUp = kernel("rm_moe_gate_up", 10);
    moeDown = kernel("rm_moe_down", 10);
    moeDownR2 = kernel("rm_moe_down_r2", 10);
    moeDownR4 = kernel("rm_moe_down_r4", 10);
    useMoeDownRowsPerWarp(tuning.moeDownRowsPerWarp());
    moeCombine = kernel("rm_moe_combine", 6);
    moeCombineRmsNorm = kernel("rm_moe_combine_rmsnorm", 8);
    moeGather = kernel("rm_moe_gather_bf16", 5);
    moeScatter = kernel("rm_moe_scatter_weighted", 5);
    moeGateUpMma = kernel("rm_moe_gate_up_mma", 10);
    moeDownMma = kernel("rm_moe_down_mma", 10);
    moeGateUpMma64 = kernel("rm_moe_gate_up_mma64", 10);
    moeDownMma64 = kernel("rm_moe_down_mma64", 10);
    setMoeMmaMinTokens(tuning.moeMmaMinTokens());
    mlaAbsorbQ = kernel("rm_mla_absorb_q", 9);
    mlaOutV = kernel("rm_mla_out_v", 8);
    mlaAppend = kernel("rm_mla_cache_append", 5);
    mlaKvRopeAppend = kernel("rm_mla_kv_rope_append", 17);
    gemv2 = kernel("rm_gemv2_bf16", 9);
    gemv1R2 = kernel("rm_gemv1_r2_bf16", 8);
    gemv1R4 = kernel("rm_gemv1_r4_bf16", 8);
    gemv1SplitK2 = kernel("rm_gemv1_splitk2_bf16", 8);
    gemv1SplitK4 = kernel("rm_gemv1_splitk4_bf16", 8);
    useGemvRowsPerWarp(tuning.gemvRowsPerWarp());
    useGemvSplitK(tuning.gemvSplitK());
    gemvSwiglu = kernel("rm_gemv_swiglu_bf16", 6);
    mlaSplit = kernel("rm_mla_decode_split", 15);
    mlaCombine = kernel("rm_mla_combine", 8);
    mlaSplitMma = kernel("rm_mla_decode_split_mma", 17);
    mlaSplitMma2 = kernel("rm_mla_decode_split_mma2", 17);
    mlaGatherCtx = kernel("rm_mla_gather_ctx", 5);
    mlaPrefillSoftmax = kernel("rm_mla_prefill_softmax", 7);
    argmax = kernel("rm_argmax", 3);
    smallBatchMoe = new SmallBatchMoe(this::kernel);
    mlaFusedDecode = new MlaFusedDecode(this::kernel);
    useMlaTensorCores(tuning.mlaTensorCores());
    useMlaStages(tuning.mlaStages());
    setProgrammaticDependentLaunch(tuning.pdl());
    gqaAttention = new GqaAttention(this::kernel);
    deviceSampler = new DeviceSampler(this::kernel);
  }

  /** Grouped-query attention over a paged KV cache (Qwen3-MoE), loaded with these. */
  public GqaAttention gqaAttention() {
    return gqaAttention;
  }

  /**
   * The sampling kernel (bias, penalties, temperature, top-k/p, min-p, logprobs), loaded with
   * these.
   */
  public DeviceSampler deviceSampler() {
    return deviceSampler;
  }

  /** MLA decode attention of a few tokens in one launch, loaded with these. */
  public MlaFusedDecode mlaFusedDecode() {
    return mlaFusedDecode;
  }

  /**
   * The MoE kernels of the smallest decode steps, loaded with these (same module and PDL switch).
   */
  public SmallBatchMoe smallBatchMoe() {
    return smallBatchMoe;
  }

  private Kernel kernel(String name, int arity) {
    Kernel k = new Kernel(module, name, arity);
    all.add(k);
    return k;
  }

  /**
   * Programmatic dependent launch for every kernel of this set from now on (graphs keep what they
   * were captured with). The constructor's tuning sets it ({@code pdl}, default on). Safe after any
   * kind of work in the stream: each kernel waits in {@code griddepcontrol.wait} for the previous
   * one, a cuBLAS or NCCL kernel included, to complete before it touches memory.
   */
  public void setProgrammaticDependentLaunch(boolean on) {
    all.forEach(k -> k.programmaticDependentLaunch(on));
  }

  /** Whether these kernels launch as programmatic dependent launches. */
  public boolean programmaticDependentLaunch() {
    return all.get(0).programmaticDependentLaunch();
  }

  private static int blocks(long work, int perBlock) {
    return (int) Math.min((work + perBlock - 1) / perBlock, 1 << 16);
  }

  /** {@code out[t, :] = table[ids[t], :]} (bf16 table, f32 out) for {@code n} tokens. */
  public void embedding(CudaStream s, long out, long table, long ids, int n, int hidden) {
    embedding.arg(0, out).arg(1, table).arg(2, ids).arg(3, hidden).launch(s, n, 1, 1, 256, 0);
  }

  /** {@code out[r, i] = silu(gate[r, i]) * up[r, i]}, gate and up rows {@code inStride} apart. */
  public void siluMul(
      CudaStream s, long out, int outStride, long gate, long up, int inStride, int rows, int cols) {
    siluMul.arg(0, out).arg(1, outStride).arg(2, gate).arg(3, up).arg(4, inStride);
    siluMul.arg(5, rows).arg(6, cols).launch(s, blocks((long) rows * cols, 256), 1, 1, 256, 0);
  }

  /** {@code out[i] = bf16(in[i])} for {@code n} values. */
  public void toBf16(CudaStream s, long out, long in, long n) {
    toBf16.arg(0, out).arg(1, in).arg(2, n).launch(s, blocks(n, 256), 1, 1, 256, 0);
  }

  /** {@code y[r, i] += bias[i]} for {@code rows} rows of {@code cols} (f32). */
  public void addBias(CudaStream s, long y, long bias, int rows, int cols) {
    addBias.arg(0, y).arg(1, bias).arg(2, rows).arg(3, cols);
    addBias.launch(s, blocks((long) rows * cols, 256), 1, 1, 256, 0);
  }

  /**
   * RMSNorm of {@code rows} rows of {@code dim}: with {@code residual != 0} first {@code residual
   * += x} and the sum is normalised; {@code out} may equal {@code x} (same strides).
   */
  public void rmsNorm(
      CudaStream s,
      long out,
      int outStride,
      long residual,
      int residualStride,
      long x,
      int xStride,
      long weight,
      int rows,
      int dim,
      float eps) {
    rmsNorm.arg(0, out).arg(1, outStride).arg(2, residual).arg(3, residualStride);
    rmsNorm.arg(4, x).arg(5, xStride).arg(6, weight).arg(7, dim).arg(8, eps);
    rmsNorm.launch(s, rows, 1, 1, 256, 0);
  }

  /**
   * Rotates {@code dim} dims at {@code offset} of each (token, head) row in place; {@code invFreq}
   * and {@code attnScaling} come from the host's rope table.
   */
  public void rope(
      CudaStream s,
      long x,
      int tokenStride,
      int headStride,
      int offset,
      long positions,
      long invFreq,
      int tokens,
      int heads,
      int dim,
      float attnScaling,
      boolean interleaved) {
    rope.arg(0, x).arg(1, tokenStride).arg(2, headStride).arg(3, offset).arg(4, positions);
    rope.arg(5, invFreq).arg(6, dim).arg(7, attnScaling).arg(8, interleaved ? 1 : 0);
    rope.launch(s, tokens, heads, 1, dim / 2, 0);
  }

  /**
   * {@code y[t, m] = W[m, :] . x[t, :]} for {@code n} tokens (bf16 W [M, K], f32 x, y). A lone
   * token runs the variant {@link #useGemvSplitK} or {@link #useGemvRowsPerWarp} chose, if any.
   */
  public void gemv(CudaStream s, long y, long w, long x, int m, int k, int n) {
    if (n == 1 && gemvOneToken(s, y, w, m, y, w, 0, x, k)) {
      return;
    }
    gemv.arg(0, y).arg(1, w).arg(2, x).arg(3, m).arg(4, k).arg(5, n);
    gemv.launch(s, blocks(m, 4), 1, 1, 128, 0);
  }

  /**
   * Two GEMVs over the same {@code x} in one launch: {@code y1 = W1 x} ({@code m1} rows) and {@code
   * y2 = W2 x} ({@code m2} rows), both bf16 with {@code k} columns, for {@code n} tokens; the same
   * sums as two {@link #gemv} calls (a lone token: with the same variant).
   */
  public void gemv2(
      CudaStream s, long y1, long w1, int m1, long y2, long w2, int m2, long x, int k, int n) {
    if (n == 1 && gemvOneToken(s, y1, w1, m1, y2, w2, m2, x, k)) {
      return;
    }
    gemv2.arg(0, y1).arg(1, w1).arg(2, m1).arg(3, y2).arg(4, w2).arg(5, m2);
    gemv2.arg(6, x).arg(7, k).arg(8, n).launch(s, blocks((long) m1 + m2, 4), 1, 1, 128, 0);
  }

  /**
   * Launches the one-token GEMV variant chosen, over the rows of {@code W1} then {@code W2} ({@code
   * m2} = 0 for a single GEMV); false when none is chosen, and the caller runs the general kernel.
   * Blocks hold 4 rows, as the general kernel's: with split-K, {@code 4 * S} warps.
   */
  private boolean gemvOneToken(
      CudaStream s, long y1, long w1, int m1, long y2, long w2, int m2, long x, int k) {
    long rows = (long) m1 + m2;
    Kernel f;
    int grid;
    int threads = 128;
    if (gemvSplitK > 1) {
      f = gemvSplitK == 2 ? gemv1SplitK2 : gemv1SplitK4;
      grid = blocks(rows, 4);
      threads *= gemvSplitK;
    } else if (gemvRowsPerWarp > 1) {
      f = gemvRowsPerWarp == 2 ? gemv1R2 : gemv1R4;
      grid = blocks((rows + gemvRowsPerWarp - 1) / gemvRowsPerWarp, 4);
    } else {
      return false;
    }
    f.arg(0, y1).arg(1, w1).arg(2, m1).arg(3, y2).arg(4, w2).arg(5, m2).arg(6, x).arg(7, k);
    f.launch(s, grid, 1, 1, threads, 0);
    return true;
  }

  /**
   * Weight rows per warp of {@link #gemv} and {@link #gemv2} for a lone token: 1 (the general
   * kernel, default), 2 or 4 (a warp streams that many rows at once, in a grid that many times
   * smaller). The output is bit-identical whichever is chosen. {@link #useGemvSplitK} above 1 takes
   * precedence. Read at each launch, so a graph captures the choice made then; the constructor's
   * tuning sets it ({@code gemv-rows-per-warp}). For benchmarks and tests.
   */
  public void useGemvRowsPerWarp(int rows) {
    gemvRowsPerWarp = oneTwoOrFour("GEMV rows per warp", rows);
  }

  /** Weight rows per warp of a one-token {@link #gemv} (1, 2 or 4). */
  public int gemvRowsPerWarp() {
    return gemvRowsPerWarp;
  }

  /**
   * Warps per weight row of {@link #gemv} and {@link #gemv2} for a lone token: 1 (the general
   * kernel), 2 or 4 (default: each warp sums an interleaved share of the row's columns; the shares
   * are added in warp order). On an H200 (V2-Lite, batch 1) 4 warps took o_proj from 5.7 to 3.8 us
   * and q|kv_a from 8.2 to 5.7 us, the decode step by ~0.05 ms. Deterministic, but the sums are
   * associated differently, so outputs differ from the one-warp kernels by float rounding (GPU
   * tests hold them to a relative error of 1e-5 against an f64 reference, as the general kernel).
   * Takes precedence over {@link #useGemvRowsPerWarp}. Read at each launch; the constructor's
   * tuning sets it ({@code gemv-split-k}). For benchmarks and tests.
   */
  public void useGemvSplitK(int warps) {
    gemvSplitK = oneTwoOrFour("GEMV split-K warps", warps);
  }

  /** Warps per weight row of a one-token {@link #gemv} (1, 2 or 4). */
  public int gemvSplitK() {
    return gemvSplitK;
  }

  private static int oneTwoOrFour(String what, int v) {
    if (v != 1 && v != 2 && v != 4) {
      throw new IllegalArgumentException(what + " must be 1, 2 or 4, not " + v);
    }
    return v;
  }

  /**
   * A SwiGLU gate|up GEMV with the activation fused: {@code out[t, j] = silu(W[j] . x[t]) *
   * (W[inter + j] . x[t])} for {@code n} tokens, {@code W} bf16 {@code [2 * inter, k]}; equal to
   * {@link #gemv} into a {@code [n, 2 * inter]} buffer followed by {@link #siluMul}.
   */
  public void gemvSwiglu(CudaStream s, long out, long w, long x, int inter, int k, int n) {
    gemvSwiglu.arg(0, out).arg(1, w).arg(2, x).arg(3, inter).arg(4, k).arg(5, n);
    gemvSwiglu.launch(s, blocks(inter, 4), 1, 1, 128, 0);
  }

  /**
   * MLA's steps between projections and attention for {@code n} tokens in one launch: the KV latent
   * {@code kv[t, 0:kvLora]} normalised (weight {@code kvNorm}), the shared rotary key {@code kv[t,
   * kvLora:]} and each of {@code heads} rotary queries at {@code q[t, h*qk + nope]} rotated, and
   * the token's latent and key appended to {@code cache} at {@code slots[t]}; as {@link #rmsNorm},
   * {@link #rope} twice and {@link #mlaCacheAppend} leave them.
   */
  public void mlaKvRopeAppend(
      CudaStream s,
      long kv,
      int kvStride,
      long kvNorm,
      float eps,
      int kvLora,
      int ropeDim,
      long q,
      int qStride,
      int heads,
      int qk,
      int nope,
      long positions,
      long invFreq,
      float attnScaling,
      boolean interleaved,
      long cache,
      long slots,
      int n) {
    int threads = 256;
    int half = ropeDim / 2;
    if (half < 1 || half > threads) {
      throw new IllegalArgumentException("rotary dims must be in [2, 512], got " + ropeDim);
    }
    int headsPerBlock = threads / half;
    Kernel f = mlaKvRopeAppend;
    f.arg(0, kv).arg(1, kvStride).arg(2, kvNorm).arg(3, eps).arg(4, kvLora).arg(5, ropeDim);
    f.arg(6, q).arg(7, qStride).arg(8, heads).arg(9, qk).arg(10, nope).arg(11, positions);
    f.arg(12, invFreq).arg(13, attnScaling).arg(14, interleaved ? 1 : 0).arg(15, cache);
    f.arg(16, slots).launch(s, n, (heads + 1 + headsPerBlock - 1) / headsPerBlock, 1, threads, 0);
  }

  /**
   * Routes {@code n} tokens from their router logits {@code [n, E]} (f32) to {@code experts [n,
   * topK]} (i32) and {@code weights [n, topK]} (f32); {@code bias} 0 when there is none.
   */
  public void moeRoute(
      CudaStream s, long experts, long weights, long logits, long bias, int n, MoeRouting r) {
    route.arg(0, experts).arg(1, weights).arg(2, logits).arg(3, bias);
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
   * {@link #moeCombine} followed by {@link #rmsNorm} with the residual, in one launch and with the
   * same bits: for each of {@code n} rows of {@code dim}, {@code s = shared + y[slot 0] + ... +
   * y[slot topK - 1]} ({@code shared} 0: none), {@code residual += s}, {@code out = weight *
   * rmsnorm(residual)}. The combined row itself is not stored.
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

  /** Writes {@code n} new tokens' latent + rotary key rows of {@code kv} into their cache slots. */
  public void mlaCacheAppend(
      CudaStream s, long cache, long kv, int kvStride, long slots, int n, int d) {
    mlaAppend.arg(0, cache).arg(1, kv).arg(2, kvStride).arg(3, slots).arg(4, d);
    mlaAppend.launch(s, n, 1, 1, 256, 0);
  }

  /**
   * KV splits for {@code tokens} queries of at most {@code maxLen} positions on {@code sms} SMs: at
   * most enough blocks (16 heads each on the tensor-core path) for two per SM, the tensor-core
   * kernel's residency (one H200, batch 32 at context 640: 8 splits 69 us, 17 splits 117 us; more
   * splits re-read each token's queries and write more partials), but no split shorter than 32
   * positions. The tensor-core kernel also never gives a split fewer than {@link
   * #MLA_MMA_MIN_CHUNK} positions, so splits a graph captured for a long nominal context stay cheap
   * when the real context is short (the surplus ones are empty).
   */
  public static int mlaSplits(int tokens, int heads, int maxLen, int sms, int maxSplits) {
    int headBlocks = (heads + 15) / 16;
    // Rounded down: one more split can push the grid past one wave (batch 32, context 640: 9
    // splits = 288 blocks for 264 slots, 72.7 us; 8 splits 56.6 us).
    int wanted = 2 * sms / (headBlocks * tokens);
    int byLength = (maxLen + 31) / 32;
    return Math.max(1, Math.min(Math.min(wanted, byLength), maxSplits));
  }

  /** Fewest positions per split of the tensor-core decode kernel (one tile). */
  public static final int MLA_MMA_MIN_CHUNK = 32;

  /**
   * Chooses the tensor-core decode kernel (default, where the shape allows) or the CUDA-core one;
   * both compute the same split partials; the constructor's tuning sets it ({@code
   * mla-tensor-cores}). For tests and benchmarks.
   */
  public void useMlaTensorCores(boolean on) {
    mlaTensorCores = on;
  }

  /**
   * Cache tiles in flight per block of the tensor-core decode kernel: 1 (one tile's copy at a time,
   * two blocks per SM) or 2 (the next tile copies while this one is computed, one block per SM).
   * The constructor's tuning sets it ({@code mla-stages}, default 1). For benchmarks and tests.
   */
  public void useMlaStages(int stages) {
    if (stages != 1 && stages != 2) {
      throw new IllegalArgumentException("MLA decode stages must be 1 or 2, not " + stages);
    }
    mlaStages = stages;
  }

  /** Cache tiles in flight per block of the tensor-core decode kernel (1 or 2). */
  public int mlaStages() {
    return mlaStages;
  }

  /** Whether split attention for latent rank {@code kvLora} runs on tensor cores. */
  public boolean mlaUsesTensorCores(int kvLora, int ropeDim) {
    return mlaTensorCores
        && kvLora % 16 == 0
        && ropeDim % 16 == 0
        && mmaSharedAllowed(mlaStages, mlaMmaSharedBytes(kvLora, ropeDim, mlaStages));
  }

  /** Raises the tensor-core kernel's shared-memory limit once; false where the GPU has less. */
  private boolean mmaSharedAllowed(int stages, int bytes) {
    if (bytes <= mmaSharedGranted[stages]) {
      return true;
    }
    if (bytes >= mmaSharedRefused[stages]) {
      return false;
    }
    try {
      mlaSplitKernel(stages).maxDynamicSharedBytes(bytes);
      mmaSharedGranted[stages] = bytes;
      return true;
    } catch (RuntimeException tooMuch) {
      mmaSharedRefused[stages] = bytes;
      return false;
    }
  }

  private Kernel mlaSplitKernel(int stages) {
    return stages == 2 ? mlaSplitMma2 : mlaSplitMma;
  }

  private static int mlaMmaSharedBytes(int kvLora, int ropeDim, int stages) {
    // Mirrors MlaMmaSmem in mla_mma.cu: q and `stages` k tiles (bf16, row stride D + 8), two
    // partial score tiles and the probabilities, the f32 context, three per-head values; parts
    // 128-byte aligned.
    int ldq = kvLora + ropeDim + 8;
    int bytes = up128(16 * ldq * 2) + stages * up128(32 * ldq * 2) + up128(2 * 16 * 36 * 4);
    bytes += up128(16 * 40 * 2) + up128(16 * (kvLora + 4) * 4);
    return bytes + 3 * 16 * 4;
  }

  private static int up128(int b) {
    return (b + 127) & ~127;
  }

  /**
   * Absorbed MLA attention for {@code t} query tokens over the paged latent cache: {@code q [t, H,
   * nope+rope]} (rotary part already rotated) gives {@code out [t, H, vDim]}. Each token attends to
   * positions {@code 0 .. tokenPos[t]} of sequence {@code tokenSeq[t]}, whose cache blocks are row
   * {@code tokenSeq[t]} of {@code blockTable [S, maxBlocksPerSeq]}. {@code kvB} is {@code
   * kv_b_proj}'s bf16 weight {@code [H*(nope+vDim), kvLora]}.
   */
  public void mlaAttention(
      CudaStream s,
      MlaWorkspace ws,
      long out,
      long q,
      long kvB,
      long cache,
      long blockTable,
      int maxBlocksPerSeq,
      long tokenSeq,
      long tokenPos,
      int t,
      int heads,
      int nope,
      int ropeDim,
      int vDim,
      int kvLora,
      int blockSize,
      int splits,
      float scale) {
    mlaAbsorb(s, ws, q, kvB, t, heads, nope, ropeDim, vDim, kvLora);
    mlaSplitAttention(
        s,
        ws,
        cache,
        blockTable,
        maxBlocksPerSeq,
        tokenSeq,
        tokenPos,
        0,
        t,
        heads,
        ropeDim,
        kvLora,
        blockSize,
        splits,
        scale);
    mlaOutV(s, ws, out, kvB, t, heads, nope, vDim, kvLora);
  }

  /**
   * First step of {@link #mlaAttention}: the absorbed queries of {@code t} tokens into {@code ws}.
   */
  public void mlaAbsorb(
      CudaStream s,
      MlaWorkspace ws,
      long q,
      long kvB,
      int t,
      int heads,
      int nope,
      int ropeDim,
      int vDim,
      int kvLora) {
    if (t > ws.maxTokens) {
      throw new IllegalArgumentException(t + " tokens exceed the workspace's " + ws.maxTokens);
    }
    mlaAbsorbQ.arg(0, ws.qLatent.ptr()).arg(1, q).arg(2, kvB).arg(3, heads).arg(4, nope);
    // Both projections take 8 tokens per block (see mla_attention.cu for the thread mapping).
    mlaAbsorbQ.arg(5, ropeDim).arg(6, vDim).arg(7, kvLora).arg(8, t);
    mlaAbsorbQ.launch(s, heads, (kvLora + 127) / 128, (t + 7) / 8, 256, 0);
  }

  /**
   * Split attention and combine for {@code count} of the absorbed queries in {@code ws}: the tokens
   * listed in {@code tokenList} (device ints), or tokens {@code 0 .. count-1} when it is 0. Writes
   * their latent context rows of {@code ws}.
   */
  public void mlaSplitAttention(
      CudaStream s,
      MlaWorkspace ws,
      long cache,
      long blockTable,
      int maxBlocksPerSeq,
      long tokenSeq,
      long tokenPos,
      long tokenList,
      int count,
      int heads,
      int ropeDim,
      int kvLora,
      int blockSize,
      int splits,
      float scale) {
    if (count > ws.maxTokens
        || splits > ws.maxSplits
        || (long) count * splits > ws.maxTokenSplits) {
      throw new IllegalArgumentException(
          count + " tokens / " + splits + " splits exceed the workspace");
    }
    if (mlaUsesTensorCores(kvLora, ropeDim)) {
      int smem = mlaMmaSharedBytes(kvLora, ropeDim, mlaStages);
      Kernel split = mlaSplitKernel(mlaStages);
      split.arg(0, ws.partialCtx.ptr()).arg(1, ws.partialMax.ptr());
      split.arg(2, ws.partialSum.ptr()).arg(3, ws.qLatent.ptr()).arg(4, cache);
      split.arg(5, blockTable).arg(6, maxBlocksPerSeq).arg(7, tokenSeq).arg(8, tokenPos);
      split.arg(9, tokenList).arg(10, heads).arg(11, kvLora).arg(12, ropeDim);
      split.arg(13, blockSize).arg(14, splits).arg(15, MLA_MMA_MIN_CHUNK).arg(16, scale);
      split.launch(s, (heads + 15) / 16, splits, count, 256, smem);
    } else {
      if (tokenList != 0) {
        throw new IllegalArgumentException("the CUDA-core split kernel takes no token list");
      }
      mlaSplit.arg(0, ws.partialCtx.ptr()).arg(1, ws.partialMax.ptr());
      mlaSplit.arg(2, ws.partialSum.ptr()).arg(3, ws.qLatent.ptr()).arg(4, cache);
      mlaSplit.arg(5, blockTable).arg(6, maxBlocksPerSeq).arg(7, tokenSeq).arg(8, tokenPos);
      mlaSplit.arg(9, heads).arg(10, kvLora).arg(11, ropeDim);
      mlaSplit.arg(12, blockSize).arg(13, splits).arg(14, scale);
      mlaSplit.launch(s, (heads + 7) / 8, splits, count, 256, 0);
    }
    mlaCombine(s, ws, tokenList, count, heads, kvLora, splits);
  }

  /**
   * The second launch of {@link #mlaSplitAttention}: merges the split partials in {@code ws} into
   * the latent context rows of {@code count} tokens (listed in {@code tokenList}, or 0 .. count-1).
   * Public so that benchmarks can time it alone.
   */
  public void mlaCombine(
      CudaStream s, MlaWorkspace ws, long tokenList, int count, int heads, int kvLora, int splits) {
    mlaCombine.arg(0, ws.ctx.ptr()).arg(1, ws.partialCtx.ptr()).arg(2, ws.partialMax.ptr());
    mlaCombine.arg(3, ws.partialSum.ptr()).arg(4, tokenList).arg(5, heads).arg(6, kvLora);
    // Dynamic shared memory: a weight and a list entry per split. Parts of 128 latent columns, a
    // thread per column.
    int parts = Math.max(1, (kvLora + 127) / 128);
    mlaCombine.arg(7, splits).launch(s, heads, count, parts, 128, 8 * splits);
  }

  /** Last step of {@link #mlaAttention}: {@code out [t, H, vDim]} from the latent context. */
  public void mlaOutV(
      CudaStream s,
      MlaWorkspace ws,
      long out,
      long kvB,
      int t,
      int heads,
      int nope,
      int vDim,
      int kvLora) {
    mlaOutV.arg(0, out).arg(1, ws.ctx.ptr()).arg(2, kvB).arg(3, heads).arg(4, nope).arg(5, vDim);
    mlaOutV.arg(6, kvLora).arg(7, t).launch(s, heads, (vDim + 31) / 32, (t + 7) / 8, 256, 0);
  }

  /**
   * Copies positions {@code 0 .. ctxLen-1} of one sequence's cache (block-table row {@code table})
   * into {@code out [ctxLen, D]} (bf16), for the prefill GEMMs.
   */
  public void mlaGatherContext(
      CudaStream s, long out, long cache, long table, int ctxLen, int d, int blockSize) {
    mlaGatherCtx.arg(0, out).arg(1, cache).arg(2, table).arg(3, d).arg(4, blockSize);
    mlaGatherCtx.launch(s, ctxLen, 1, 1, 128, 0);
  }

  /**
   * Causal softmax of prefill scores {@code S [heads, rows, ld]} (f32) into {@code P} (bf16, same
   * layout): row {@code (h, i)} sees positions {@code 0 .. pos[i]} of {@code ctxLen}.
   */
  public void mlaPrefillSoftmax(
      CudaStream s,
      long p,
      long scores,
      long pos,
      int rows,
      int heads,
      int ctxLen,
      int ld,
      float scale) {
    mlaPrefillSoftmax.arg(0, p).arg(1, scores).arg(2, pos).arg(3, rows).arg(4, ctxLen);
    mlaPrefillSoftmax.arg(5, ld).arg(6, scale).launch(s, rows, heads, 1, 256, 0);
  }

  /** {@code out[r] = argmax logits[r, :]} (lowest index on ties) for {@code rows} rows. */
  public void argmax(CudaStream s, long out, long logits, int rows, int vocab) {
    argmax.arg(0, out).arg(1, logits).arg(2, vocab).launch(s, rows, 1, 1, 1024, 0);
  }

  @Override
  public void close() {
    driver.moduleUnload(module);
  }
}
