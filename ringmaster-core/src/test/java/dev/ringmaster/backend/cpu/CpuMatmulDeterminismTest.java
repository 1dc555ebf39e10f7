package dev.ringmaster.backend.cpu;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.backend.DType;
import java.lang.foreign.Arena;
import java.util.Arrays;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Tiling and threading must not change the arithmetic: every (row, token) result is bitwise the
 * same whether computed alone, in a batch, or with a different number of threads. This catches
 * tiles that mix up rows or tokens, which a tolerance could hide.
 */
class CpuMatmulDeterminismTest {
  @AfterAll
  static void restoreDefaults() {
    CpuKernels.setVectorBits(0);
    CpuKernels.setThreads(Runtime.getRuntime().availableProcessors());
  }

  @ParameterizedTest
  @EnumSource(
      value = DType.class,
      names = {"F32", "BF16", "F16"})
  void batchAndThreadsDoNotChangeResults(DType dtype) {
    CpuKernels.setVectorBits(256);
    int rows = 203;
    int cols = 1501;
    int n = 23;
    try (Arena arena = Arena.ofShared()) {
      CpuMatrix w = TestMatrices.random(arena, dtype, rows, cols, 5);
      float[] x = TestMatrices.randomInputs(n * cols, 6);

      CpuKernels.setThreads(3);
      float[] batched = new float[n * rows];
      CpuMatmul.matmul(batched, x, n, w);

      CpuKernels.setThreads(1);
      float[] serial = new float[n * rows];
      CpuMatmul.matmul(serial, x, n, w);
      assertThat(serial).isEqualTo(batched);

      for (int t = 0; t < n; t++) {
        float[] one = new float[rows];
        CpuMatmul.matmul(one, Arrays.copyOfRange(x, t * cols, (t + 1) * cols), 1, w);
        assertThat(one)
            .as("token %d", t)
            .isEqualTo(Arrays.copyOfRange(batched, t * rows, (t + 1) * rows));
      }
    }
  }
}
