package dev.ringmaster.backend.cpu;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringmaster.backend.DType;
import dev.ringmaster.backend.quant.E2m1;
import dev.ringmaster.backend.quant.Fp8E4m3;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The matmul on quantized matrices (random codes and scales, odd sizes, partial FP8 blocks at the
 * edges) equals the f32 matmul on the same matrix dequantized by hand, bit for bit, for one and
 * several tokens; the dequantizer follows the formats' definitions element by element.
 */
class QuantizedMatmulTest {
  private static final SplittableRandom RANDOM = new SplittableRandom(7);

  private static CpuMatrix fp8Block(Arena arena, int rows, int cols) {
    MemorySegment codes = arena.allocate((long) rows * cols);
    for (long i = 0; i < codes.byteSize(); i++) {
      codes.set(ValueLayout.JAVA_BYTE, i, (byte) finiteE4m3());
    }
    int br = (rows + 127) / 128;
    int bc = (cols + 127) / 128;
    MemorySegment scales = arena.allocate((long) br * bc * 4, 4);
    for (int i = 0; i < br * bc; i++) {
      scales.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i, (float) RANDOM.nextDouble(1e-3, 1e-1));
    }
    return new CpuMatrix(codes, DType.F8_E4M3, rows, cols, new Quantization.Fp8Block(scales, bc));
  }

  private static CpuMatrix nvfp4(Arena arena, int rows, int cols) {
    MemorySegment packed = arena.allocate((long) rows * cols / 2);
    for (long i = 0; i < packed.byteSize(); i++) {
      packed.set(ValueLayout.JAVA_BYTE, i, (byte) RANDOM.nextInt(256));
    }
    MemorySegment scales = arena.allocate((long) rows * cols / 16);
    for (long i = 0; i < scales.byteSize(); i++) {
      scales.set(ValueLayout.JAVA_BYTE, i, (byte) (finiteE4m3() & 0x7f));
    }
    return new CpuMatrix(packed, DType.U8, rows, cols, new Quantization.Nvfp4(scales, 0.37f));
  }

  private static int finiteE4m3() {
    int b;
    do {
      b = RANDOM.nextInt(256);
    } while ((b & 0x7f) == 0x7f);
    return b;
  }

  /** The same values as a plain f32 matrix. */
  private static CpuMatrix asF32(Arena arena, CpuMatrix q) {
    float[] v = Dequantizer.matrix(q);
    MemorySegment seg = arena.allocate((long) v.length * 4, 4);
    MemorySegment.copy(v, 0, seg, ValueLayout.JAVA_FLOAT_UNALIGNED, 0, v.length);
    return new CpuMatrix(seg, DType.F32, q.rows(), q.cols());
  }

  @Test
  void dequantizerFollowsTheFormatDefinitions() {
    try (Arena arena = Arena.ofConfined()) {
      CpuMatrix f = fp8Block(arena, 130, 260);
      Quantization.Fp8Block b = (Quantization.Fp8Block) f.quant();
      for (int[] rc : new int[][] {{0, 0}, {127, 128}, {128, 255}, {129, 259}, {5, 200}}) {
        int r = rc[0];
        int c = rc[1];
        float code = Fp8E4m3.decode(f.data().get(ValueLayout.JAVA_BYTE, (long) r * 260 + c));
        float scale =
            b.scales().getAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, (r / 128) * 3L + c / 128);
        assertThat(f.get(r, c)).isEqualTo(code * scale);
      }
      CpuMatrix n = nvfp4(arena, 3, 48);
      Quantization.Nvfp4 q = (Quantization.Nvfp4) n.quant();
      for (int[] rc : new int[][] {{0, 0}, {0, 1}, {2, 47}, {1, 16}, {1, 33}}) {
        int r = rc[0];
        int c = rc[1];
        int byteValue = n.data().get(ValueLayout.JAVA_BYTE, (long) r * 24 + c / 2);
        int code = (c % 2 == 0) ? byteValue & 0xf : (byteValue >>> 4) & 0xf;
        float scale =
            Fp8E4m3.decode(q.scales().get(ValueLayout.JAVA_BYTE, (long) r * 3 + c / 16))
                * q.globalScale();
        assertThat(n.get(r, c)).isEqualTo(E2m1.decode(code) * scale);
      }
    }
  }

  @ParameterizedTest
  @ValueSource(ints = {1, 3, 9})
  void quantizedMatmulEqualsF32MatmulOnTheDequantizedMatrix(int tokens) {
    CpuKernelContext kernels = CpuKernelContext.shared();
    try (Arena arena = Arena.ofConfined()) {
      for (CpuMatrix q :
          new CpuMatrix[] {
            fp8Block(arena, 300, 257),
            fp8Block(arena, 5, 64),
            nvfp4(arena, 301, 272),
            nvfp4(arena, 3, 16),
            nvfp4(arena, 1024, 512), // large enough to run on the thread pool
            new CpuMatrix(
                fp8Block(arena, 37, 129).data(),
                DType.F8_E4M3,
                37,
                129,
                new Quantization.Fp8Tensor(0.02f))
          }) {
        CpuMatrix plain = asF32(arena, q);
        float[] x = TestMatrices.randomInputs(tokens * q.cols(), tokens);
        float[] got = new float[tokens * q.rows()];
        float[] want = new float[tokens * q.rows()];
        CpuMatmul.matmul(kernels, got, x, tokens, q);
        CpuMatmul.matmul(kernels, want, x, tokens, plain);
        assertThat(got).as("%dx%d %s", q.rows(), q.cols(), q.quant()).containsExactly(want);
        float[] row = new float[q.cols()];
        CpuMatmul.loadRow(kernels, q, q.rows() - 1, row, 0);
        float[] wantRow = new float[q.cols()];
        CpuMatmul.loadRow(kernels, plain, q.rows() - 1, wantRow, 0);
        assertThat(row).containsExactly(wantRow);
      }
    }
  }

  @Test
  void badShapesAreRefused() {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment codes = arena.allocate(64);
      assertThatThrownBy(
              () ->
                  new CpuMatrix(
                      codes,
                      DType.F8_E4M3,
                      8,
                      8,
                      new Quantization.Fp8Block(arena.allocate(8, 4), 1)))
          .hasMessageContaining("scales");
      assertThatThrownBy(
              () ->
                  new CpuMatrix(
                      codes, DType.U8, 16, 8, new Quantization.Nvfp4(arena.allocate(8), 1f)))
          .hasMessageContaining("multiple of 16");
      assertThatThrownBy(
              () -> new CpuMatrix(codes, DType.BF16, 8, 4, new Quantization.Fp8Tensor(1f)))
          .hasMessageContaining("F8_E4M3");
    }
  }
}
