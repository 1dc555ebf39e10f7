package dev.ringmaster.backend.cpu;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.backend.DType;
import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * {@link CpuMatmul#matmul} against a double-precision reference, for every dtype and vector width
 * (widths the CPU lacks are emulated by the Vector API, slowly but exactly), over shapes with odd
 * column counts, fewer rows than threads, and batches from 1 to 64 tokens. The error bound is
 * {@link TestMatrices#bound}: about (cols/lanes + 2·lanes)·2^-24 relative to sum |w·x| (cols·2^-24
 * for the bf16 kernels' single chain).
 */
class CpuMatmulAccuracyTest {
  /** rows, cols, n. The last two are big enough to run on several threads. */
  private static final int[][] SHAPES = {
    {1, 1, 1},
    {3, 7, 1},
    {1, 8, 1},
    {5, 17, 2},
    {13, 33, 3},
    {4, 64, 4},
    {31, 100, 5},
    {17, 31, 6},
    {64, 257, 8},
    {7, 1000, 37},
    {100, 129, 1},
    {2, 16, 64},
    {37, 4099, 1},
    {9, 515, 37},
    {300, 1030, 1},
    {130, 2050, 9},
  };

  static List<Arguments> cases() {
    List<Arguments> cases = new ArrayList<>();
    for (int bits : new int[] {128, 256, 512}) {
      for (DType dtype : new DType[] {DType.F32, DType.BF16, DType.F16}) {
        for (int[] s : SHAPES) {
          cases.add(Arguments.of(bits, dtype, s[0], s[1], s[2]));
        }
      }
    }
    return cases;
  }

  @ParameterizedTest(name = "{0} bits {1} {2}x{3} n={4}")
  @MethodSource("cases")
  void matchesDoublePrecisionReference(int bits, DType dtype, int rows, int cols, int n) {
    int lanes = bits / 32;
    try (Arena arena = Arena.ofShared();
        CpuKernelContext kernels = new CpuKernelContext(bits, 3)) {
      CpuMatrix w = TestMatrices.random(arena, dtype, rows, cols, 31L * rows + cols);
      float[] x = TestMatrices.randomInputs(n * cols, 7L * n + cols);
      float[] out = new float[n * rows + 3];
      out[n * rows] = 42; // past the end: must stay untouched
      CpuMatmul.matmul(kernels, out, x, n, w);
      for (int t = 0; t < n; t++) {
        for (int r = 0; r < rows; r++) {
          double[] ref = TestMatrices.reference(w, r, x, t * cols);
          double bound = TestMatrices.bound(dtype, cols, lanes, ref[1]);
          assertThat((double) out[t * rows + r])
              .as("token %d row %d", t, r)
              .isCloseTo(ref[0], org.assertj.core.data.Offset.offset(bound));
        }
      }
      assertThat(out[n * rows]).isEqualTo(42);
    }
  }
}
