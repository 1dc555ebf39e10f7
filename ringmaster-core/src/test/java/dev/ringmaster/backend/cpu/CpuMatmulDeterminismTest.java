package dev.ringmaster.backend.cpu;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.backend.DType;
import java.lang.foreign.Arena;
import java.util.Arrays;
import java.util.List;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Tiling and threading must not change the arithmetic: every (row, token) result is bitwise the
 * same whether computed alone, in a batch, or with a different number of threads. This catches
 * tiles that mix up rows or tokens, which a tolerance could hide.
 */
class CpuMatmulDeterminismTest {
  static Stream<Arguments> dtypesAndWidths() {
    return Stream.of(DType.F32, DType.BF16, DType.F16)
        .flatMap(d -> IntStream.of(128, 256, 512).mapToObj(bits -> Arguments.of(d, bits)));
  }

  @ParameterizedTest
  @MethodSource("dtypesAndWidths")
  void batchAndThreadsDoNotChangeResults(DType dtype, int bits) {
    int rows = 203;
    int cols = 1501;
    int n = 23;
    try (Arena arena = Arena.ofShared();
        CpuKernelContext three = new CpuKernelContext(bits, 3);
        CpuKernelContext single = new CpuKernelContext(bits, 1)) {
      CpuMatrix w = TestMatrices.random(arena, dtype, rows, cols, 5);
      float[] x = TestMatrices.randomInputs(n * cols, 6);

      float[] batched = new float[n * rows];
      CpuMatmul.matmul(three, batched, x, n, w);

      float[] serial = new float[n * rows];
      CpuMatmul.matmul(single, serial, x, n, w);
      assertThat(serial).isEqualTo(batched);

      for (int t = 0; t < n; t++) {
        float[] one = new float[rows];
        CpuMatmul.matmul(three, one, Arrays.copyOfRange(x, t * cols, (t + 1) * cols), 1, w);
        assertThat(one)
            .as("token %d", t)
            .isEqualTo(Arrays.copyOfRange(batched, t * rows, (t + 1) * rows));
      }
    }
  }

  /** An expert's gathered tokens (as MoE runs them) give each token's solo result bitwise. */
  @ParameterizedTest
  @MethodSource("dtypesAndWidths")
  void gatheredTokenListsMatchSoloProducts(DType dtype, int bits) {
    int rows = 64;
    int cols = 256;
    int n = 9;
    int[] picked = {7, 0, 3, 8, 5};
    try (Arena arena = Arena.ofShared();
        CpuKernelContext two = new CpuKernelContext(bits, 2)) {
      CpuMatrix w = TestMatrices.random(arena, dtype, rows, cols, 11);
      float[] x = TestMatrices.randomInputs(n * cols, 12);
      float[] gathered = new float[picked.length * rows];
      CpuMatmul.matmulMany(two, List.of(new CpuMatmul.Job(w, x, picked, gathered)));
      for (int k = 0; k < picked.length; k++) {
        float[] one = new float[rows];
        int t = picked[k];
        CpuMatmul.matmul(two, one, Arrays.copyOfRange(x, t * cols, (t + 1) * cols), 1, w);
        assertThat(Arrays.copyOfRange(gathered, k * rows, (k + 1) * rows))
            .as("token %d", t)
            .isEqualTo(one);
      }
    }
  }
}
