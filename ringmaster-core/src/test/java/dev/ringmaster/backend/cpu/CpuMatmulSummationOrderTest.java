package dev.ringmaster.backend.cpu;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.backend.DType;
import java.lang.foreign.Arena;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The kernels' summation order is a fixed function of the vector width (docs/numerics.md): each
 * lane accumulates its columns with fused multiply-adds, the lanes are summed by the pairwise tree
 * (lane {@code i} plus lane {@code i ^ half}, half from lanes/2 down to 1), and the columns past
 * the last full vector are added one at a time. This checks every tile, one token and several, bit
 * for bit against that order written out in scalar code, so a faster reduction cannot change a
 * result.
 */
class CpuMatmulSummationOrderTest {
  static Stream<Arguments> cases() {
    return Stream.of(DType.F32, DType.BF16, DType.F16)
        .flatMap(d -> IntStream.of(128, 256, 512).mapToObj(bits -> Arguments.of(d, bits)));
  }

  @ParameterizedTest
  @MethodSource("cases")
  void everyTileSumsInTheDocumentedOrder(DType dtype, int bits) {
    int lanes = bits / 32;
    int rows = 11;
    int cols = 7 * lanes + 3;
    try (Arena arena = Arena.ofShared();
        CpuKernelContext kernels = new CpuKernelContext(bits, 1)) {
      CpuMatrix w = TestMatrices.random(arena, dtype, rows, cols, 17);
      for (int n : new int[] {1, 3, 4, 5, 6, 9}) {
        float[] x = TestMatrices.randomInputs(n * cols, 18 + n);
        float[] out = new float[n * rows];
        CpuMatmul.matmul(kernels, out, x, n, w);
        float[] weights = new float[cols];
        for (int r = 0; r < rows; r++) {
          CpuMatmul.loadRow(kernels, w, r, weights, 0);
          for (int t = 0; t < n; t++) {
            assertThat(out[t * rows + r])
                .as("%s %d bits, row %d, token %d of %d", dtype, bits, r, t, n)
                .isEqualTo(inOrder(weights, x, t * cols, cols, lanes));
          }
        }
      }
    }
  }

  private static float inOrder(float[] w, float[] x, int xo, int cols, int lanes) {
    float[] acc = new float[lanes];
    int bound = cols / lanes * lanes;
    for (int c = 0; c < bound; c += lanes) {
      for (int l = 0; l < lanes; l++) {
        acc[l] = Math.fma(w[c + l], x[xo + c + l], acc[l]);
      }
    }
    for (int half = lanes / 2; half >= 1; half /= 2) {
      float[] next = new float[lanes];
      for (int i = 0; i < lanes; i++) {
        next[i] = acc[i] + acc[i ^ half];
      }
      acc = next;
    }
    float sum = acc[0];
    for (int c = bound; c < cols; c++) {
      sum = Math.fma(w[c], x[xo + c], sum);
    }
    return sum;
  }
}
