package dev.ringmaster.cuda.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.testing.Compare;
import dev.ringmaster.cuda.testing.DeviceScope;
import dev.ringmaster.cuda.testing.Gpu;
import dev.ringmaster.cuda.testing.Rand;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The one-token GEMV variants ({@link RingmasterKernels#useGemvRowsPerWarp}, {@link
 * RingmasterKernels#useGemvSplitK}) against the general kernel, through {@link
 * RingmasterKernels#gemv} ({@code m2} = 0) and {@link RingmasterKernels#gemv2}: 2 and 4 rows per
 * warp bit for bit; split-K over 2 and 4 warps the same bits on a second run and within 1e-5
 * relative error of the f64 reference (the general kernel's bound, GemvGpuTest). More than one
 * token runs the general kernel whatever is chosen. Shapes: row counts that are not multiples of 2,
 * 4 or a block's 4 rows, K not a multiple of 256 and K not a multiple of 8 (the scalar path).
 */
@Tag("gpu")
class GemvVariantsGpuTest {
  private static final int[] VARIANTS = {2, 4};

  /**
   * Runs {@code launches} with the one-warp-per-row GEMV selected, then restores the selection: for
   * tests whose reference is that kernel's exact sums (the fused kernels repeat them).
   */
  static void withOneWarpPerRow(RingmasterKernels kk, Runnable launches) {
    int split = kk.gemvSplitK();
    int rows = kk.gemvRowsPerWarp();
    kk.useGemvSplitK(1);
    kk.useGemvRowsPerWarp(1);
    try {
      launches.run();
    } finally {
      kk.useGemvSplitK(split);
      kk.useGemvRowsPerWarp(rows);
    }
  }

  @ParameterizedTest
  @CsvSource({
    // rows of W1, rows of W2 (0: one GEMV), K, tokens
    "2048,0,2048,1", // o_proj
    "3072,576,2048,1", // q|kv_a
    "1,0,8,1",
    "37,5,72,1",
    "513,0,1000,1",
    "130,7,1408,1",
    "3,2,77,1", // K % 8 != 0
    "6,0,13,1",
    "255,0,7168,1",
    "37,5,72,2", // more than one token: the general kernel
    "100,30,264,3"
  })
  void variantsMatchTheGeneralKernel(int m1, int m2, int k, int n) {
    Rand r = new Rand();
    int m = m1 + m2;
    Rand.Bf16 w = r.bf16(m * k, 0.5f);
    float[] x = r.uniform(n * k, 1f);
    // The stacked [W1; W2] rows in the layout run() returns: one GEMV of m1 + m2 rows.
    float[] want = GemvGpuTest.reference(w.values(), x, m, k, n);
    String seed = "seed " + r.seed();
    Gpu.run(
        s -> {
          RingmasterKernels kk = Gpu.kernels();
          int rowsBefore = kk.gemvRowsPerWarp();
          int splitBefore = kk.gemvSplitK();
          long wp = s.bf16(w.bits()).ptr();
          long xp = s.f32(x).ptr();
          try {
            kk.useGemvSplitK(1);
            kk.useGemvRowsPerWarp(1);
            float[] general = run(s, kk, wp, xp, m1, m2, k, n);
            Compare.assertClose("general kernel, " + seed, general, want, 1e-5);
            for (int rows : VARIANTS) {
              kk.useGemvRowsPerWarp(rows);
              float[] got = run(s, kk, wp, xp, m1, m2, k, n);
              assertThat(Compare.bits(got))
                  .as("%d rows per warp, %s", rows, seed)
                  .isEqualTo(Compare.bits(general));
            }
            kk.useGemvRowsPerWarp(1);
            for (int warps : VARIANTS) {
              kk.useGemvSplitK(warps);
              float[] got = run(s, kk, wp, xp, m1, m2, k, n);
              Compare.assertClose("split-K " + warps + " warps, " + seed, got, want, 1e-5);
              assertThat(Compare.bits(run(s, kk, wp, xp, m1, m2, k, n)))
                  .as("split-K %d warps run twice, %s", warps, seed)
                  .isEqualTo(Compare.bits(got));
              if (n > 1) {
                assertThat(Compare.bits(got))
                    .as("split-K %d warps, %d tokens (general kernel), %s", warps, n, seed)
                    .isEqualTo(Compare.bits(general));
              }
            }
          } finally {
            kk.useGemvRowsPerWarp(rowsBefore);
            kk.useGemvSplitK(splitBefore);
          }
        });
  }

  /** {@code [y1 | y2]} per token (each token's W1 rows then its W2 rows) into poisoned outputs. */
  private static float[] run(
      DeviceScope s, RingmasterKernels kk, long w, long x, int m1, int m2, int k, int n) {
    DeviceBuffer y1 = s.poisoned((long) n * m1);
    if (m2 == 0) {
      kk.gemv(s.stream(), y1.ptr(), w, x, m1, k, n);
      return s.read(y1, n * m1);
    }
    DeviceBuffer y2 = s.poisoned((long) n * m2);
    kk.gemv2(s.stream(), y1.ptr(), w, m1, y2.ptr(), w + 2L * m1 * k, m2, x, k, n);
    float[] a = s.read(y1, n * m1);
    float[] b = s.read(y2, n * m2);
    float[] out = new float[n * (m1 + m2)];
    for (int t = 0; t < n; t++) {
      System.arraycopy(a, t * m1, out, t * (m1 + m2), m1);
      System.arraycopy(b, t * m2, out, t * (m1 + m2) + m1, m2);
    }
    return out;
  }
}
