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

  private final Kernel gemv;
  private final Kernel gemvSwiglu;
  private final Kernel dequant;

  Fp8Kernels(BiFunction<String, Integer, Kernel> kernel) {
    gemv = kernel.apply("rm_gemv_fp8", 13);
    gemvSwiglu = kernel.apply("rm_gemv_swiglu_fp8", 7);
    dequant = kernel.apply("rm_dequant_fp8_bf16", 6);
  }

  /**
   * {@code y[n, m] = x[n, k] . W^T} with {@code W} e4m3 {@code [m, k]} ({@code codes}) and its
   * block scales, for a few tokens (a warp per 2 rows, each group of 4 tokens streaming the rows
   * again).
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
    gemv.arg(0, y1).arg(1, codes1).arg(2, scales1).arg(3, partRows1).arg(4, m1);
    gemv.arg(5, y2).arg(6, codes2).arg(7, scales2).arg(8, partRows2).arg(9, m2);
    gemv.arg(10, x).arg(11, k).arg(12, n);
    gemv.launch(s, RingmasterKernels.blocks(m1 + m2, 4 * GEMV_ROWS_PER_WARP), 1, 1, 128, 0);
  }

  /**
   * {@code out[n, inter] = silu(x . G^T) * (x . U^T)} for the FP8 gate|up matrix {@code [G; U]}
   * ({@code [2 * inter, k]}, scales in parts of {@code inter} rows), a warp per output column.
   */
  public void gemvSwiglu(
      CudaStream s, long out, long codes, long scales, long x, int inter, int k, int n) {
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
