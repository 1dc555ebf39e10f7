package dev.ringmaster.cuda.kernels;

import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.Kernel;
import java.util.function.BiFunction;

/**
 * Weight-only kernels for DeepSeek FP8 block-scaled weights ({@code fp8_weights.cu}): e4m3 codes
 * {@code [rows, k]} and one f32 scale per 128x128 block, decoded in registers; activations and
 * accumulation f32. A matrix may be a stack of parts quantized one by one ({@code partRows} rows
 * each: the fused gate|up matrix, stacked experts), each part's scales starting a fresh block row;
 * a plain matrix is one part of all its rows.
 */
public final class Fp8Kernels {
  /** Rows of the stack per warp of {@code rm_gemv_fp8} (kFp8GemvRowsPerWarp). */
  private static final int GEMV_ROWS_PER_WARP = 2;

  /** Rows of the stack per warp of {@code rm_gemv1_fp8} (kQ1Fp8GemvRows). */
  private static final int GEMV1_ROWS_PER_WARP = 2;

  /** Output columns per warp of {@code rm_gemv_swiglu1_fp8} (kQ1Fp8SwigluCols). */
  private static final int SWIGLU1_COLS_PER_WARP = 2;

  private final Kernel gemv;
  private final Kernel gemvSwiglu;
  private final Kernel gemv1;
  private final Kernel gemvSwiglu1;
  private final Kernel gemv1WeightsFirst;
  private final Kernel gemvSwiglu1WeightsFirst;
  private boolean oneToken;
  private boolean weightsFirst;

  /**
   * Most tokens for which a dense FP8 linear beyond the GEMV runs on tensor cores ({@link
   * #linearMma}: the codes read once per 32 tokens) instead of a bf16 copy and cuBLAS. At 64 tokens
   * the codes are read twice (2 bytes per weight) against the copy's 5 (an FP8 byte read, two bf16
   * bytes written and read back); beyond, prefill chunks, the GEMM's work dwarfs the copy.
   */
  public static final int LINEAR_MMA_MAX_TOKENS = 64;

  /** Blocks a split {@link #linearMma} aims for: two per SM of a 132-SM H200 (2 fit per SM). */
  private static final int LINEAR_MMA_TARGET_BLOCKS = 264;

  /** Most K slices of a {@link #linearMma}. */
  private static final int LINEAR_MMA_MAX_SPLITS = 8;

  private static final int LINEAR_MMA_ROWS_PER_BLOCK = 64;
  private static final int LINEAR_MMA_PASS_TOKENS = 32;
  private static final int FP8_BLOCK = 128;

  private final Kernel dequant;
  private final Kernel linearMma;
  private final Kernel sumSplits;
  private final Kernel sumSplitsSwiglu;

  Fp8Kernels(BiFunction<String, Integer, Kernel> kernel, boolean oneToken, boolean weightsFirst) {
    gemv = kernel.apply("rm_gemv_fp8", 13);
    gemvSwiglu = kernel.apply("rm_gemv_swiglu_fp8", 7);
    gemv1 = kernel.apply("rm_gemv1_fp8", 12);
    gemvSwiglu1 = kernel.apply("rm_gemv_swiglu1_fp8", 6);
    gemv1WeightsFirst = kernel.apply("rm_gemv1_fp8_wf", 12);
    gemvSwiglu1WeightsFirst = kernel.apply("rm_gemv_swiglu1_fp8_wf", 6);
    this.oneToken = oneToken;
    this.weightsFirst = weightsFirst;
    dequant = kernel.apply("rm_dequant_fp8_bf16", 6);
    linearMma = kernel.apply("rm_linear_mma_fp8", 9);
    sumSplits = kernel.apply("rm_sum_splits", 4);
    sumSplitsSwiglu = kernel.apply("rm_sum_splits_swiglu", 5);
  }

  /**
   * Whether a lone token's {@link #gemv}, {@link #gemv2} and {@link #gemvSwiglu} run the one-token
   * kernels ({@code quant_one_token.cu}: several rows a warp, 16 loads of 16 bytes in flight per
   * lane, registers of the one-token path alone) instead of the general ones; the outputs are bit
   * for bit the same. Read at each launch, so a graph captures the choice made then; the kernel
   * option {@code quant-one-token} sets it. For benchmarks and tests.
   */
  public void useOneTokenKernels(boolean on) {
    oneToken = on;
  }

  /** Whether a lone token takes the one-token kernels ({@link #useOneTokenKernels}). */
  public boolean oneTokenKernels() {
    return oneToken;
  }

  /**
   * Whether the one-token kernels issue each lane's code and scale loads before the
   * programmatic-launch wait where a row is one group of chunks a lane (K up to 2048), so that
   * their DRAM latency overlaps the previous kernel ({@code rm_gemv1_fp8_wf}, {@code
   * rm_gemv_swiglu1_fp8_wf}; weights are never written, activations are read after the wait); the
   * outputs are bit for bit the same. Read at each launch; the kernel option {@code
   * quant-weights-first} sets it. For benchmarks and tests.
   */
  public void useWeightsFirst(boolean on) {
    weightsFirst = on;
  }

  /** Whether the one-token kernels load weights before the wait ({@link #useWeightsFirst}). */
  public boolean weightsFirst() {
    return weightsFirst;
  }

  /**
   * Whether {@link #linearMma} takes an FP8 matrix of {@code k} columns whose scales come in parts
   * of {@code partRows} rows: 8-byte aligned code rows, and a warp's 16 rows inside one scale
   * block.
   */
  public static boolean linearMmaSupports(int k, int partRows) {
    return k % 8 == 0 && partRows % 16 == 0;
  }

  static void checkLinearMma(int k, int partRows) {
    if (!linearMmaSupports(k, partRows)) {
      throw new IllegalArgumentException(
          "tensor-core FP8 linear needs K % 8 == 0 and scale parts of a multiple of 16 rows, got K = "
              + k
              + ", parts of "
              + partRows
              + " rows (use the dequantizing path)");
    }
  }

  /**
   * Columns per K slice of {@link #linearMma} for an {@code [m, k]} matrix: whole 128-column scale
   * blocks, as many slices as bring the grid near {@link #LINEAR_MMA_TARGET_BLOCKS} (at most {@link
   * #LINEAR_MMA_MAX_SPLITS}, one where the row blocks alone fill the GPU). Depends on the shape
   * only, so a token's result does not depend on the batch.
   */
  public static int linearMmaSlice(int m, int k) {
    int rowBlocks = (m + LINEAR_MMA_ROWS_PER_BLOCK - 1) / LINEAR_MMA_ROWS_PER_BLOCK;
    int kBlocks = (k + FP8_BLOCK - 1) / FP8_BLOCK;
    int want = (LINEAR_MMA_TARGET_BLOCKS + rowBlocks - 1) / rowBlocks;
    int splits = Math.max(1, Math.min(Math.min(want, LINEAR_MMA_MAX_SPLITS), kBlocks));
    return (kBlocks + splits - 1) / splits * FP8_BLOCK;
  }

  /** K slices of {@link #linearMma} for an {@code [m, k]} matrix. */
  public static int linearMmaSplits(int m, int k) {
    int slice = linearMmaSlice(m, k);
    return (k + slice - 1) / slice;
  }

  /**
   * Floats of split partials that {@link #linearMma} of {@code n} tokens needs for an {@code [m,
   * k]} matrix (0 when it is not split).
   */
  public static long linearMmaScratchFloats(int m, int k, int n) {
    int splits = linearMmaSplits(m, k);
    return splits == 1 ? 0 : (long) splits * n * m;
  }

  /**
   * The largest {@link #linearMmaScratchFloats} of any matrix for {@code n} tokens: a split matrix
   * has fewer than {@code LINEAR_MMA_TARGET_BLOCKS} row blocks and at most {@code target /
   * rowBlocks + 1} slices, so {@code splits * m} stays under {@code 2 * target * 64} rows.
   */
  public static long linearMmaMaxScratchFloats(int n) {
    return 2L * LINEAR_MMA_TARGET_BLOCKS * LINEAR_MMA_ROWS_PER_BLOCK * n;
  }

  /**
   * {@code y[n, m] = x[n, k] . W^T} on tensor cores ({@code fp8_linear_mma.cu}): {@code W} e4m3
   * {@code [m, k]} with its block scales in parts of {@code partRows} rows, activations rounded to
   * bf16 (as cuBLAS takes them), codes decoded exactly, f32 accumulation; each 64-row block streams
   * its codes once per 32 tokens, K split into {@link #linearMmaSplits} slices summed in order
   * through {@code partials} (at least {@link #linearMmaScratchFloats} floats; unused for one
   * slice). A token's row does not depend on the other tokens. Needs {@link #linearMmaSupports}.
   */
  public void linearMma(
      CudaStream s,
      long y,
      long codes,
      long scales,
      int partRows,
      long x,
      int m,
      int k,
      int n,
      long partials,
      long partialFloats) {
    int splits =
        linearMmaPartials(s, y, codes, scales, partRows, x, m, k, n, partials, partialFloats);
    if (splits > 1) {
      long count = (long) n * m;
      sumSplits.arg(0, y).arg(1, partials).arg(2, splits).arg(3, count);
      sumSplits.launch(s, RingmasterKernels.blocks(count, 256), 1, 1, 256, 0);
    }
  }

  /**
   * {@code out[n, inter] = silu(x . G^T) * (x . U^T)} for the FP8 gate|up matrix {@code [G; U]}
   * ({@code [2 * inter, k]}) on tensor cores: {@link #linearMma} whose split sum also applies
   * SiLU-and-mul ({@code rm_sum_splits_swiglu}), bit for bit {@link #linearMma} then {@code
   * rm_silu_mul}, one launch and one {@code [n, 2 * inter]} round trip fewer. Only for a split
   * matrix ({@link #linearMmaSplits} above 1; the caller takes the two-kernel path otherwise).
   */
  public void linearMmaSwiglu(
      CudaStream s,
      long out,
      long codes,
      long scales,
      int partRows,
      long x,
      int inter,
      int k,
      int n,
      long partials,
      long partialFloats) {
    if (linearMmaSplits(2 * inter, k) < 2) {
      throw new IllegalArgumentException(
          "the tensor-core SwiGLU linear needs a split matrix, ["
              + 2 * inter
              + ", "
              + k
              + "] is not");
    }
    int splits =
        linearMmaPartials(
            s, 0, codes, scales, partRows, x, 2 * inter, k, n, partials, partialFloats);
    sumSplitsSwiglu.arg(0, out).arg(1, partials).arg(2, splits).arg(3, n).arg(4, inter);
    sumSplitsSwiglu.launch(s, RingmasterKernels.blocks((long) n * inter, 256), 1, 1, 256, 0);
  }

  /**
   * The mma launch of {@link #linearMma}: into {@code y} (one slice) or the partials; the splits.
   */
  private int linearMmaPartials(
      CudaStream s,
      long y,
      long codes,
      long scales,
      int partRows,
      long x,
      int m,
      int k,
      int n,
      long partials,
      long partialFloats) {
    checkLinearMma(k, partRows);
    int slice = linearMmaSlice(m, k);
    int splits = (k + slice - 1) / slice;
    long need = linearMmaScratchFloats(m, k, n);
    if (need > partialFloats) {
      throw new IllegalStateException(
          "FP8 linear ["
              + m
              + ", "
              + k
              + "] at "
              + n
              + " tokens needs "
              + need
              + " floats of split partials, the scratch holds "
              + partialFloats);
    }
    linearMma.arg(0, splits == 1 ? y : partials).arg(1, codes).arg(2, scales).arg(3, partRows);
    linearMma.arg(4, x).arg(5, m).arg(6, k).arg(7, n).arg(8, slice);
    linearMma.launch(
        s,
        RingmasterKernels.blocks(m, LINEAR_MMA_ROWS_PER_BLOCK),
        RingmasterKernels.blocks(n, LINEAR_MMA_PASS_TOKENS),
        splits,
        128,
        0);
    return splits;
  }

  /**
   * {@code y[n, m] = x[n, k] . W^T} with {@code W} e4m3 {@code [m, k]} ({@code codes}) and its
   * block scales, for a few tokens (a warp per 2 rows, each group of 4 tokens streaming the rows
   * again; a lone token: {@link #useOneTokenKernels}).
   */
  public void gemv(
      CudaStream s, long y, long codes, long scales, int partRows, long x, int m, int k, int n) {
    gemv2(s, y, codes, scales, partRows, m, 0, 0, 0, 1, 0, x, k, n);
  }

  /**
   * {@code y1 = x . W1^T} ({@code m1} rows) and {@code y2 = x . W2^T} ({@code m2} rows) in one
   * launch, both FP8 with their own scales and part rows, {@code k} columns, {@code n} tokens.
   */
  public void gemv2(
      CudaStream s,
      long y1,
      long codes1,
      long scales1,
      int partRows1,
      int m1,
      long y2,
      long codes2,
      long scales2,
      int partRows2,
      int m2,
      long x,
      int k,
      int n) {
    if (n == 1 && oneToken) {
      Kernel gemv1 = weightsFirst ? gemv1WeightsFirst : this.gemv1;
      gemv1.arg(0, y1).arg(1, codes1).arg(2, scales1).arg(3, partRows1).arg(4, m1);
      gemv1.arg(5, y2).arg(6, codes2).arg(7, scales2).arg(8, partRows2).arg(9, m2);
      gemv1.arg(10, x).arg(11, k);
      gemv1.launch(s, RingmasterKernels.blocks(m1 + m2, 4 * GEMV1_ROWS_PER_WARP), 1, 1, 128, 0);
      return;
    }
    gemv.arg(0, y1).arg(1, codes1).arg(2, scales1).arg(3, partRows1).arg(4, m1);
    gemv.arg(5, y2).arg(6, codes2).arg(7, scales2).arg(8, partRows2).arg(9, m2);
    gemv.arg(10, x).arg(11, k).arg(12, n);
    gemv.launch(s, RingmasterKernels.blocks(m1 + m2, 4 * GEMV_ROWS_PER_WARP), 1, 1, 128, 0);
  }

  /**
   * {@code out[n, inter] = silu(x . G^T) * (x . U^T)} for the FP8 gate|up matrix {@code [G; U]}
   * ({@code [2 * inter, k]}, scales in parts of {@code inter} rows), a warp per output column (a
   * lone token: per 2 columns, {@link #useOneTokenKernels}).
   */
  public void gemvSwiglu(
      CudaStream s, long out, long codes, long scales, long x, int inter, int k, int n) {
    if (n == 1 && oneToken) {
      Kernel gemvSwiglu1 = weightsFirst ? gemvSwiglu1WeightsFirst : this.gemvSwiglu1;
      gemvSwiglu1.arg(0, out).arg(1, codes).arg(2, scales).arg(3, x).arg(4, inter).arg(5, k);
      gemvSwiglu1.launch(
          s, RingmasterKernels.blocks(inter, 4 * SWIGLU1_COLS_PER_WARP), 1, 1, 128, 0);
      return;
    }
    gemvSwiglu.arg(0, out).arg(1, codes).arg(2, scales).arg(3, x).arg(4, inter).arg(5, k);
    gemvSwiglu.arg(6, n).launch(s, RingmasterKernels.blocks(inter, 4), 1, 1, 128, 0);
  }

  /** {@code out} (bf16 {@code [rows, k]}) = the dequantized matrix, each value rounded to bf16. */
  public void dequantToBf16(
      CudaStream s, long out, long codes, long scales, int partRows, long rows, int k) {
    long work = (k & 3) == 0 ? rows * (k / 4) : rows * k;
    dequant.arg(0, out).arg(1, codes).arg(2, scales).arg(3, rows).arg(4, k).arg(5, partRows);
    dequant.launch(s, RingmasterKernels.blocks(work, 256), 1, 1, 256, 0);
  }
}
