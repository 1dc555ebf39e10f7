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
  private final Kernel gemv;
  private final Kernel dequant;

  Fp8Kernels(BiFunction<String, Integer, Kernel> kernel) {
    gemv = kernel.apply("rm_gemv_fp8", 8);
    dequant = kernel.apply("rm_dequant_fp8_bf16", 6);
  }

  /**
   * {@code y[n, m] = x[n, k] . W^T} with {@code W} e4m3 {@code [m, k]} ({@code codes}) and its
   * block scales, for a few tokens (a warp per row, each group of 4 tokens streaming the row
   * again).
   */
  public void gemv(
      CudaStream s, long y, long codes, long scales, int partRows, long x, int m, int k, int n) {
    gemv.arg(0, y).arg(1, codes).arg(2, scales).arg(3, x).arg(4, m).arg(5, k).arg(6, partRows);
    gemv.arg(7, n).launch(s, RingmasterKernels.blocks(m, 4), 1, 1, 128, 0);
  }

  /** {@code out} (bf16 {@code [rows, k]}) = the dequantized matrix, each value rounded to bf16. */
  public void dequantToBf16(
      CudaStream s, long out, long codes, long scales, int partRows, long rows, int k) {
    long work = (k & 3) == 0 ? rows * (k / 4) : rows * k;
    dequant.arg(0, out).arg(1, codes).arg(2, scales).arg(3, rows).arg(4, k).arg(5, partRows);
    dequant.launch(s, RingmasterKernels.blocks(work, 256), 1, 1, 256, 0);
  }
}
