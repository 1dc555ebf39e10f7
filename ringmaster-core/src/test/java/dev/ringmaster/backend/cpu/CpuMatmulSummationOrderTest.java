package dev.ringmaster.backend.cpu;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringmaster.backend.DType;
import java.lang.foreign.Arena;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The kernels' summation order (docs/numerics.md). f32 and f16: a fixed function of the vector
 * width, each lane accumulating its columns with fused multiply-adds, the lanes summed by the
 * pairwise tree (lane {@code i} plus lane {@code i ^ half}, half from lanes/2 down to 1), and the
 * columns past the last full vector added one at a time. bf16 (the packed kernels): one fused
 * multiply-add chain per output over the columns in order, the same at every width. This checks
 * every tile, one token and several, bit for bit against that order written out in scalar code, so
 * a faster kernel cannot change a result.
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
    // Rows end in a partial block of the packed layout; odd columns leave a half pair.
    int rows = 2 * lanes + 3;
    int cols = 7 * lanes + 3;
    try (Arena arena = Arena.ofShared();
        CpuKernelContext kernels = new CpuKernelContext(bits, 1)) {
      CpuMatrix w = TestMatrices.random(arena, dtype, rows, cols, 17);
      for (int n : new int[] {1, 2, 3, 4, 5, 6, 7, 8, 9}) {
        float[] x = TestMatrices.randomInputs(n * cols, 18 + n);
        float[] out = new float[n * rows];
        CpuMatmul.matmul(kernels, out, x, n, w);
        float[] weights = new float[cols];
        for (int r = 0; r < rows; r++) {
          CpuMatmul.loadRow(kernels, w, r, weights, 0);
          for (int t = 0; t < n; t++) {
            assertThat(out[t * rows + r])
                .as("%s %d bits, row %d, token %d of %d", dtype, bits, r, t, n)
                .isEqualTo(
                    dtype == DType.BF16
                        ? chain(weights, x, t * cols, cols)
                        : inOrder(weights, x, t * cols, cols, lanes));
          }
        }
      }
    }
  }

  @ParameterizedTest
  @MethodSource("widths")
  void bf16RowChunksAndWidthsGiveTheSameBits(int bits) {
    // The packed kernels' results do not depend on the vector width or on which rows a call asks
    // for: chunks that start on any block, short tiles, gathered token lists.
    int rows = 70;
    int cols = 257;
    int n = 11;
    try (Arena arena = Arena.ofShared();
        CpuKernelContext kernels = new CpuKernelContext(bits, 1);
        CpuKernelContext narrow = new CpuKernelContext(128, 1)) {
      CpuMatrix w = TestMatrices.random(arena, DType.BF16, rows, cols, 5);
      float[] x = TestMatrices.randomInputs(n * cols, 6);
      float[] out = new float[n * rows];
      CpuMatmul.matmul(kernels, out, x, n, w);
      float[] ref = new float[n * rows];
      CpuMatmul.matmul(narrow, ref, x, n, w);
      assertThat(out).isEqualTo(ref);
      RowKernel kernel = kernels.kernel(DType.BF16);
      int lanes = kernel.lanes();
      int[] xOffsets = {3 * cols, 0, 10 * cols};
      int[] outOffsets = {0, rows, 2 * rows};
      float[] part = new float[3 * rows];
      for (int r0 = 0; r0 < rows; r0 += lanes) {
        kernel.packedRows(
            w.packedBf16(lanes),
            rows,
            cols,
            r0,
            Math.min(rows, r0 + lanes),
            x,
            xOffsets,
            part,
            outOffsets);
      }
      for (int r = 0; r < rows; r++) {
        assertThat(part[r]).isEqualTo(ref[3 * rows + r]);
        assertThat(part[rows + r]).isEqualTo(ref[r]);
        assertThat(part[2 * rows + r]).isEqualTo(ref[10 * rows + r]);
      }
      assertThatThrownBy(
              () ->
                  kernel.packedRows(
                      w.packedBf16(lanes), rows, cols, 1, rows, x, xOffsets, part, outOffsets))
          .isInstanceOf(IllegalArgumentException.class);
    }
  }

  static IntStream widths() {
    return IntStream.of(128, 256, 512);
  }

  /** One fused multiply-add chain over the columns in order, as the packed bf16 kernels sum. */
  private static float chain(float[] w, float[] x, int xo, int cols) {
    float sum = 0f;
    for (int c = 0; c < cols; c++) {
      sum = Math.fma(w[c], x[xo + c], sum);
    }
    return sum;
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
