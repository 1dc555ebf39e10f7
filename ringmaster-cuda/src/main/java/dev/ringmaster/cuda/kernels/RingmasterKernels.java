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

  private final CudaDriver driver;
  private final long module;
  private final Kernel embedding;
  private final Kernel siluMul;
  private final Kernel toBf16;
  private final Kernel addBias;
  private final Kernel rmsNorm;
  private final Kernel rope;
  private final Kernel gemv;
  private final Kernel gemvT8;
  private final Fp8Kernels fp8;
  private final Nvfp4Kernels nvfp4;
  private final Kernel gemv2;
  private final Kernel gemv2T8;
  private final Kernel gemv1R2;
  private final Kernel gemv1R4;
  private final Kernel gemv1SplitK2;
  private final Kernel gemv1SplitK4;
  private int gemvRowsPerWarp;
  private int gemvSplitK;
  private int gemvTokenGroup;
  private final Kernel gemvSwiglu;
  private final Kernel gemvSwigluT8;
  private final Kernel argmax;
  private final List<Kernel> all = new ArrayList<>();
  private final MoeKernels moe;
  private final MlaKernels mla;
  private final DsaKernels dsa;
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
   * moe-down-rows-per-warp}, {@code gemv-rows-per-warp}, {@code gemv-split-k}, {@code
   * gemv-token-group}, {@code quant-one-token}, {@code quant-weights-first}).
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
    gemv2 = kernel("rm_gemv2_bf16", 9);
    gemvT8 = kernel("rm_gemv_t8_bf16", 6);
    gemv2T8 = kernel("rm_gemv2_t8_bf16", 9);
    gemv1R2 = kernel("rm_gemv1_r2_bf16", 8);
    gemv1R4 = kernel("rm_gemv1_r4_bf16", 8);
    gemv1SplitK2 = kernel("rm_gemv1_splitk2_bf16", 8);
    gemv1SplitK4 = kernel("rm_gemv1_splitk4_bf16", 8);
    useGemvRowsPerWarp(tuning.gemvRowsPerWarp());
    useGemvSplitK(tuning.gemvSplitK());
    gemvSwiglu = kernel("rm_gemv_swiglu_bf16", 6);
    gemvSwigluT8 = kernel("rm_gemv_swiglu_t8_bf16", 6);
    useGemvTokenGroup(tuning.gemvTokenGroup());
    moe = new MoeKernels(this::kernel, tuning);
    mla = new MlaKernels(this::kernel, tuning);
    dsa = new DsaKernels(this::kernel, mla, tuning);
    argmax = kernel("rm_argmax", 3);
    smallBatchMoe = new SmallBatchMoe(this::kernel, this::gemvTokenGroup);
    mlaFusedDecode = new MlaFusedDecode(this::kernel);
    fp8 = new Fp8Kernels(this::kernel, tuning.quantOneToken(), tuning.quantWeightsFirst());
    nvfp4 = new Nvfp4Kernels(this::kernel, tuning.quantOneToken());
    setProgrammaticDependentLaunch(tuning.pdl());
    gqaAttention = new GqaAttention(this::kernel);
    deviceSampler = new DeviceSampler(this::kernel);
  }

  /**
   * Whether a lone token's FP8 and NVFP4 GEMVs and CUDA-core routed experts run the one-token
   * kernels (bit-identical to the general ones; the kernel option {@code quant-one-token}): sets
   * {@link Fp8Kernels#useOneTokenKernels}, {@link Nvfp4Kernels#useOneTokenKernels} and {@link
   * MoeKernels#useOneTokenFp8Experts} together. Read at each launch. For benchmarks and tests.
   */
  public void useQuantOneToken(boolean on) {
    fp8.useOneTokenKernels(on);
    nvfp4.useOneTokenKernels(on);
    moe.useOneTokenFp8Experts(on);
  }

  /** Whether the quantized one-token kernels are chosen ({@link #useQuantOneToken}). */
  public boolean quantOneToken() {
    return fp8.oneTokenKernels();
  }

  /**
   * Whether the one-token FP8 kernels load weights before the programmatic-launch wait (the kernel
   * option {@code quant-weights-first}; bit-identical): sets {@link Fp8Kernels#useWeightsFirst} and
   * {@link MoeKernels#useOneTokenFp8WeightsFirst} together. Read at each launch. For benchmarks and
   * tests.
   */
  public void useQuantWeightsFirst(boolean on) {
    fp8.useWeightsFirst(on);
    moe.useOneTokenFp8WeightsFirst(on);
  }

  /** Whether the one-token FP8 kernels load weights first ({@link #useQuantWeightsFirst}). */
  public boolean quantWeightsFirst() {
    return fp8.weightsFirst();
  }

  /** The MoE kernels (routing, experts, combine), loaded with these. */
  public MoeKernels moe() {
    return moe;
  }

  /** The FP8 block-scaled weight kernels (GEMV, dequantization), loaded with these. */
  public Fp8Kernels fp8() {
    return fp8;
  }

  /** The NVFP4 weight kernels (GEMVs, dequantization, routed experts), loaded with these. */
  public Nvfp4Kernels nvfp4() {
    return nvfp4;
  }

  /** The MLA kernels (cache append, decode attention, prefill pieces), loaded with these. */
  public MlaKernels mla() {
    return mla;
  }

  /**
   * The DeepSeek Sparse Attention kernels (indexer scores, top-k, sparse MLA), loaded with these.
   */
  public DsaKernels dsa() {
    return dsa;
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

  static int blocks(long work, int perBlock) {
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
   * token runs the variant {@link #useGemvSplitK} or {@link #useGemvRowsPerWarp} chose, if any;
   * more tokens pass over the weights in groups of {@link #useGemvTokenGroup}.
   */
  public void gemv(CudaStream s, long y, long w, long x, int m, int k, int n) {
    if (n == 1 && gemvOneToken(s, y, w, m, y, w, 0, x, k)) {
      return;
    }
    Kernel f = groupsOfEight(n) ? gemvT8 : gemv;
    f.arg(0, y).arg(1, w).arg(2, x).arg(3, m).arg(4, k).arg(5, n);
    f.launch(s, blocks(m, 4), 1, 1, 128, 0);
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
    Kernel f = groupsOfEight(n) ? gemv2T8 : gemv2;
    f.arg(0, y1).arg(1, w1).arg(2, m1).arg(3, y2).arg(4, w2).arg(5, m2);
    f.arg(6, x).arg(7, k).arg(8, n).launch(s, blocks((long) m1 + m2, 4), 1, 1, 128, 0);
  }

  /**
   * Whether {@code n} tokens take the kernels that pass over the weights in groups of 8: only past
   * 4 tokens, where groups of 4 would stream the weights more than once (up to 4 tokens both are
   * the same code, and the groups-of-4 kernels use fewer registers).
   */
  private boolean groupsOfEight(int n) {
    return gemvTokenGroup == 8 && n > 4;
  }

  /**
   * Most tokens of one pass over the weights of {@link #gemv}, {@link #gemv2}, {@link #gemvSwiglu}
   * and the router GEMV of {@link SmallBatchMoe#routerRoute}: 4 or 8 (default; {@code
   * gemv-token-group}). Each pass streams every weight row once, so 5-8 tokens (a verify pass of
   * 4-7 drafts, a decode batch of 5-8) read the weights once with 8 and twice with 4. A token's sum
   * is the same whichever group holds it (the same per-lane order), so the output is bit-identical
   * either way. Read at each launch, so a graph captures the choice made then. For benchmarks and
   * tests.
   */
  public void useGemvTokenGroup(int tokens) {
    if (tokens != 4 && tokens != 8) {
      throw new IllegalArgumentException("GEMV token group must be 4 or 8, not " + tokens);
    }
    gemvTokenGroup = tokens;
  }

  /** Most tokens of one pass over the weights of the bf16 GEMVs (4 or 8). */
  public int gemvTokenGroup() {
    return gemvTokenGroup;
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

  static int oneTwoOrFour(String what, int v) {
    if (v != 1 && v != 2 && v != 4) {
      throw new IllegalArgumentException(what + " must be 1, 2 or 4, not " + v);
    }
    return v;
  }

  /**
   * A SwiGLU gate|up GEMV with the activation fused: {@code out[t, j] = silu(W[j] . x[t]) *
   * (W[inter + j] . x[t])} for {@code n} tokens, {@code W} bf16 {@code [2 * inter, k]}; equal to
   * {@link #gemv} into a {@code [n, 2 * inter]} buffer followed by {@link #siluMul}. Tokens in
   * groups of {@link #useGemvTokenGroup}.
   */
  public void gemvSwiglu(CudaStream s, long out, long w, long x, int inter, int k, int n) {
    Kernel f = groupsOfEight(n) ? gemvSwigluT8 : gemvSwiglu;
    f.arg(0, out).arg(1, w).arg(2, x).arg(3, inter).arg(4, k).arg(5, n);
    f.launch(s, blocks(inter, 4), 1, 1, 128, 0);
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
