package dev.ringmaster.cuda.kernels;

import static dev.ringmaster.cuda.kernels.RingmasterKernels.blocks;

import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.Kernel;
import java.util.function.BiFunction;

/**
 * Weight-only kernels for ModelOpt NVFP4 weights ({@code nvfp4_weights.cu}, {@code
 * nvfp4_moe_mma.cu}): e2m1 codes {@code [rows, k / 2]} in the device nibble order of {@code
 * Nvfp4Layout}, one e4m3 scale per 16 elements of a row ({@code [rows, k / 16]}) and one f32 global
 * scale per part of {@code partRows} rows ({@code weight_scale_2}: the fused gate|up matrix has two
 * parts, stacked experts one per expert projection); decoded in registers. The GEMVs and the
 * CUDA-core experts keep f32 activations; the tensor-core experts round activations and the SwiGLU
 * intermediate to bf16, as the bf16 and FP8 ones do. Every {@code k} is a multiple of 16.
 */
public final class Nvfp4Kernels {
  /** Rows of the stack per warp of {@code rm_gemv_nvfp4} (kNvfp4GemvRowsPerWarp). */
  private static final int GEMV_ROWS_PER_WARP = 2;

  /** Tokens per weight pass of the narrow tensor-core expert kernels (the *mma8_nvfp4 kernels). */
  public static final int MOE_MMA_NARROW_PASS_TOKENS = 8;

  /** Tokens per weight pass of the wide tensor-core expert kernels. */
  public static final int MOE_MMA_PASS_TOKENS = 32;

  private static final int MMA_ROWS_PER_BLOCK = 64;
  private static final int MMA_THREADS = 128;

  /** Rows per warp of {@code rm_gemv1_nvfp4} (kQ1Nvfp4GemvRows). */
  private static final int GEMV1_ROWS_PER_WARP = 4;

  /** Output columns per warp of {@code rm_gemv_swiglu1_nvfp4} (kQ1Nvfp4SwigluCols). */
  private static final int SWIGLU1_COLS_PER_WARP = 2;

  /** Intermediate rows per warp of {@code rm_moe_gate_up1_nvfp4} (kQ1Nvfp4GateUpCols). */
  private static final int GATE_UP1_ROWS_PER_WARP = 2;

  /** Output rows per warp of {@code rm_moe_down1_nvfp4} (kQ1Nvfp4DownRows). */
  private static final int DOWN1_ROWS_PER_WARP = 4;

  private final Kernel gemv;
  private final Kernel gemvSwiglu;
  private final Kernel gemv1;
  private final Kernel gemvSwiglu1;
  private final Kernel gateUp1;
  private final Kernel down1;
  private boolean oneToken;
  private final Kernel dequant;
  private final Kernel gateUp;
  private final Kernel down;
  private final Kernel gateUpMma;
  private final Kernel downMma;
  private final Kernel gateUpMma8;
  private final Kernel downMma8;

  Nvfp4Kernels(BiFunction<String, Integer, Kernel> kernel, boolean oneToken) {
    gemv = kernel.apply("rm_gemv_nvfp4", 15);
    gemvSwiglu = kernel.apply("rm_gemv_swiglu_nvfp4", 8);
    gemv1 = kernel.apply("rm_gemv1_nvfp4", 14);
    gemvSwiglu1 = kernel.apply("rm_gemv_swiglu1_nvfp4", 7);
    gateUp1 = kernel.apply("rm_moe_gate_up1_nvfp4", 12);
    down1 = kernel.apply("rm_moe_down1_nvfp4", 12);
    this.oneToken = oneToken;
    dequant = kernel.apply("rm_dequant_nvfp4_bf16", 7);
    gateUp = kernel.apply("rm_moe_gate_up_nvfp4", 12);
    down = kernel.apply("rm_moe_down_nvfp4", 12);
    gateUpMma = kernel.apply("rm_moe_gate_up_mma_nvfp4", 12);
    downMma = kernel.apply("rm_moe_down_mma_nvfp4", 12);
    gateUpMma8 = kernel.apply("rm_moe_gate_up_mma8_nvfp4", 12);
    downMma8 = kernel.apply("rm_moe_down_mma8_nvfp4", 12);
  }

  /**
   * Whether a lone token's GEMVs ({@link #gemv}, {@link #gemv2}, {@link #gemvSwiglu}) and CUDA-core
   * routed experts ({@link #moeExpertPairs} of one token) run the one-token kernels ({@code
   * quant_one_token.cu}: several rows a warp, registers of the one-token path alone) instead of the
   * general ones; the outputs are bit for bit the same. Read at each launch; the kernel option
   * {@code quant-one-token} sets it. For benchmarks and tests.
   */
  public void useOneTokenKernels(boolean on) {
    oneToken = on;
  }

  /** Whether a lone token takes the one-token kernels ({@link #useOneTokenKernels}). */
  public boolean oneTokenKernels() {
    return oneToken;
  }

  /**
   * {@code y[n, m] = x[n, k] . W^T} for a few tokens: {@code W} NVFP4 {@code [m, k]} (codes,
   * scales, globals in parts of {@code partRows} rows), a warp per 2 rows.
   */
  public void gemv(
      CudaStream s,
      long y,
      long codes,
      long scales,
      long globals,
      int partRows,
      long x,
      int m,
      int k,
      int n) {
    gemv2(s, y, codes, scales, globals, partRows, m, 0, 0, 0, 0, 1, 0, x, k, n);
  }

  /**
   * {@code y1 = x . W1^T} ({@code m1} rows) and {@code y2 = x . W2^T} ({@code m2} rows) in one
   * launch, both NVFP4 with their own scales, globals and part rows; {@code k} columns, {@code n}
   * tokens.
   */
  public void gemv2(
      CudaStream s,
      long y1,
      long codes1,
      long scales1,
      long globals1,
      int partRows1,
      int m1,
      long y2,
      long codes2,
      long scales2,
      long globals2,
      int partRows2,
      int m2,
      long x,
      int k,
      int n) {
    if (n == 1 && oneToken) {
      gemv1.arg(0, y1).arg(1, codes1).arg(2, scales1).arg(3, globals1).arg(4, partRows1);
      gemv1.arg(5, m1).arg(6, y2).arg(7, codes2).arg(8, scales2).arg(9, globals2);
      gemv1.arg(10, partRows2).arg(11, m2).arg(12, x).arg(13, k);
      gemv1.launch(s, blocks(m1 + m2, 4 * GEMV1_ROWS_PER_WARP), 1, 1, 128, 0);
      return;
    }
    gemv.arg(0, y1).arg(1, codes1).arg(2, scales1).arg(3, globals1).arg(4, partRows1).arg(5, m1);
    gemv.arg(6, y2).arg(7, codes2).arg(8, scales2).arg(9, globals2).arg(10, partRows2);
    gemv.arg(11, m2).arg(12, x).arg(13, k).arg(14, n);
    gemv.launch(s, blocks(m1 + m2, 4 * GEMV_ROWS_PER_WARP), 1, 1, 128, 0);
  }

  /**
   * {@code out[n, inter] = silu(x . G^T) * (x . U^T)} for the NVFP4 gate|up matrix {@code [G; U]}
   * ({@code [2 * inter, k]}, two parts of {@code inter} rows, {@code globals} their two global
   * scales), a warp per output column.
   */
  public void gemvSwiglu(
      CudaStream s,
      long out,
      long codes,
      long scales,
      long globals,
      long x,
      int inter,
      int k,
      int n) {
    if (n == 1 && oneToken) {
      gemvSwiglu1.arg(0, out).arg(1, codes).arg(2, scales).arg(3, globals).arg(4, x);
      gemvSwiglu1.arg(5, inter).arg(6, k);
      gemvSwiglu1.launch(s, blocks(inter, 4 * SWIGLU1_COLS_PER_WARP), 1, 1, 128, 0);
      return;
    }
    gemvSwiglu.arg(0, out).arg(1, codes).arg(2, scales).arg(3, globals).arg(4, x);
    gemvSwiglu.arg(5, inter).arg(6, k).arg(7, n).launch(s, blocks(inter, 4), 1, 1, 128, 0);
  }

  /**
   * {@code out} (bf16 {@code [rows, k]}) = the dequantized matrix, each value {@code e2m1 * (e4m3 *
   * global)} rounded to bf16.
   */
  public void dequantToBf16(
      CudaStream s,
      long out,
      long codes,
      long scales,
      long globals,
      int partRows,
      long rows,
      int k) {
    dequant.arg(0, out).arg(1, codes).arg(2, scales).arg(3, globals).arg(4, rows).arg(5, k);
    dequant.arg(6, partRows).launch(s, blocks(rows * (k / 8), 256), 1, 1, 256, 0);
  }

  /**
   * Tokens per weight pass of the NVFP4 tensor-core experts for {@code n} tokens: {@link
   * #MOE_MMA_NARROW_PASS_TOKENS} up to {@link MoeKernels#MOE_MMA_FP8_NARROW_PAIRS_PER_EXPERT}
   * routed pairs per expert on average (the FP8 kernels' threshold, for the same reason: one token
   * tile of accumulators keeps more blocks per SM), else {@link #MOE_MMA_PASS_TOKENS}.
   */
  public static int moeMmaPassTokens(int n, int topK, int numExperts) {
    return MoeKernels.moeMmaFp8PassTokens(n, topK, numExperts)
            == MoeKernels.MOE_MMA_FP8_NARROW_PASS_TOKENS
        ? MOE_MMA_NARROW_PASS_TOKENS
        : MOE_MMA_PASS_TOKENS;
  }

  /**
   * {@link #moeExpertPairs(CudaStream, MoeKernels, MoeWorkspace, long, long, long, long, long,
   * long, long, long, long, int, int, int, boolean, boolean, int)} with the tensor-core pass size
   * of {@link #moeMmaPassTokens} for the workspace's routing.
   */
  public void moeExpertPairs(
      CudaStream s,
      MoeKernels moe,
      MoeWorkspace ws,
      long x,
      long w13,
      long s13,
      long g13,
      long w2,
      long s2,
      long g2,
      long experts,
      long weights,
      int n,
      int hidden,
      int inter,
      boolean tensorCores,
      boolean aligned) {
    int passTokens =
        tensorCores ? moeMmaPassTokens(n, ws.topK, ws.numExperts) : MOE_MMA_PASS_TOKENS;
    moeExpertPairs(
        s,
        moe,
        ws,
        x,
        w13,
        s13,
        g13,
        w2,
        s2,
        g2,
        experts,
        weights,
        n,
        hidden,
        inter,
        tensorCores,
        aligned,
        passTokens);
  }

  /**
   * The routed experts of {@code n} tokens without the final sum, for NVFP4 experts: {@code w13 [E,
   * 2 * inter, hidden]} with scales {@code s13} and globals {@code g13 [2E]} (each expert's gate,
   * then its up projection), {@code w2 [E, hidden, inter]} with {@code s2} and {@code g2 [E]}. The
   * pairs' rows are left in {@link MoeWorkspace#pairRowsPtr()}. With {@code tensorCores} (needs
   * {@link MoeKernels#moeMmaSupports}) the tensor-core kernels in passes of {@code passTokens}
   * ({@link #moeMmaPassTokens}), else the CUDA-core ones (f32 activations; {@code aligned}: {@code
   * ws} already holds the pairs grouped by expert; one token: {@link #useOneTokenKernels}).
   */
  public void moeExpertPairs(
      CudaStream s,
      MoeKernels moe,
      MoeWorkspace ws,
      long x,
      long w13,
      long s13,
      long g13,
      long w2,
      long s2,
      long g2,
      long experts,
      long weights,
      int n,
      int hidden,
      int inter,
      boolean tensorCores,
      boolean aligned,
      int passTokens) {
    if (tensorCores && aligned) {
      throw new IllegalArgumentException("the tensor-core experts align the pairs themselves");
    }
    if (tensorCores && !MoeKernels.moeMmaSupports(hidden, inter)) {
      throw new IllegalArgumentException(
          "tensor-core experts need hidden and inter multiples of 8, got " + hidden + ", " + inter);
    }
    if (passTokens != MOE_MMA_NARROW_PASS_TOKENS && passTokens != MOE_MMA_PASS_TOKENS) {
      throw new IllegalArgumentException(
          "NVFP4 tensor-core expert passes are of "
              + MOE_MMA_NARROW_PASS_TOKENS
              + " or "
              + MOE_MMA_PASS_TOKENS
              + " tokens, got "
              + passTokens);
    }
    if (!aligned) {
      moe.moeAlign(s, ws, experts, n);
    }
    int active = Math.min(n * ws.topK, ws.numExperts);
    boolean narrow = passTokens == MOE_MMA_NARROW_PASS_TOKENS;
    boolean one = !tensorCores && n == 1 && oneToken;
    Kernel gu = tensorCores ? (narrow ? gateUpMma8 : gateUpMma) : one ? gateUp1 : gateUp;
    Kernel dn = tensorCores ? (narrow ? downMma8 : downMma) : one ? down1 : down;
    int rowsPerBlock = tensorCores ? MMA_ROWS_PER_BLOCK : 4;
    int threads = tensorCores ? MMA_THREADS : 128;
    int gateUpRows = one ? 4 * GATE_UP1_ROWS_PER_WARP : rowsPerBlock;
    int downRows = one ? 4 * DOWN1_ROWS_PER_WARP : rowsPerBlock;
    gu.arg(0, ws.h.ptr()).arg(1, w13).arg(2, s13).arg(3, g13).arg(4, x).arg(5, ws.offsets.ptr());
    gu.arg(6, ws.sortedPairs.ptr()).arg(7, ws.activeExperts.ptr());
    gu.arg(8, ws.activeCount.ptr()).arg(9, hidden).arg(10, inter).arg(11, ws.topK);
    gu.launch(s, blocks(inter, gateUpRows), active, 1, threads, 0);
    dn.arg(0, ws.y.ptr()).arg(1, w2).arg(2, s2).arg(3, g2).arg(4, ws.h.ptr()).arg(5, weights);
    dn.arg(6, ws.offsets.ptr()).arg(7, ws.sortedPairs.ptr());
    dn.arg(8, ws.activeExperts.ptr()).arg(9, ws.activeCount.ptr());
    dn.arg(10, hidden).arg(11, inter);
    dn.launch(s, blocks(hidden, downRows), active, 1, threads, 0);
  }
}
