package dev.ringmaster.backend.cpu;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.backend.DType;
import dev.ringmaster.backend.quant.E2m1;
import dev.ringmaster.backend.quant.Fp8E4m3;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The vector decoders of FP8 and NVFP4 weights against their definition, bit for bit: every code
 * and scale decodes as {@link Dequantizer} decodes it (raw bits, NaN codes and signed zeros
 * included), and every product equals the one with the scalar reference decode for 1 to 9 tokens,
 * odd sizes, partial FP8 blocks, any row range, gathered token lists and several threads, at every
 * vector width.
 */
class QuantizedRowKernelTest {
  /** Scales with special cases: overflow of the products, subnormal products, zero, signs. */
  private static final float[] SPECIAL_SCALES = {
    1f, 0.0173f, -0.5f, 3e38f, 1e-40f, 0f, -0f, 7.5e-3f, 200f, 1e-30f, Float.MIN_NORMAL
  };

  @ParameterizedTest
  @ValueSource(ints = {128, 256, 512})
  void everyCodeDecodesAsTheDequantizer(int bits) {
    try (Arena arena = Arena.ofShared();
        CpuKernelContext kernels = new CpuKernelContext(bits, 1)) {
      List<CpuMatrix> matrices = new ArrayList<>();
      // Each row holds every code (NaNs too) at some column, in a different order per row.
      int rows = 131;
      int cols = 256 + 45;
      MemorySegment codes = arena.allocate((long) rows * cols);
      for (int r = 0; r < rows; r++) {
        for (int c = 0; c < cols; c++) {
          codes.set(ValueLayout.JAVA_BYTE, (long) r * cols + c, (byte) (c * 7 + r * 13));
        }
      }
      int blockCols = 3;
      MemorySegment grid = arena.allocate(2L * blockCols * 4, 4);
      for (int i = 0; i < 2 * blockCols; i++) {
        grid.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i, SPECIAL_SCALES[i + 1]);
      }
      matrices.add(
          new CpuMatrix(
              codes, DType.F8_E4M3, rows, cols, new Quantization.Fp8Block(grid, blockCols)));
      for (float s : SPECIAL_SCALES) {
        matrices.add(
            new CpuMatrix(codes, DType.F8_E4M3, rows, cols, new Quantization.Fp8Tensor(s)));
      }
      // NVFP4: every byte value (both nibbles of every code) and every scale code, NaN included.
      int fp4Rows = 16;
      int fp4Cols = 512;
      MemorySegment packed = arena.allocate((long) fp4Rows * fp4Cols / 2);
      for (long i = 0; i < packed.byteSize(); i++) {
        packed.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 37 + i / 256));
      }
      MemorySegment scales = arena.allocate((long) fp4Rows * fp4Cols / 16);
      for (long i = 0; i < scales.byteSize(); i++) {
        scales.set(ValueLayout.JAVA_BYTE, i, (byte) i);
      }
      for (float global : new float[] {1f, 3.7e-4f, 0.37f, 6e35f, 1e-38f}) {
        matrices.add(
            new CpuMatrix(
                packed, DType.U8, fp4Rows, fp4Cols, new Quantization.Nvfp4(scales, global)));
      }
      for (CpuMatrix w : matrices) {
        float[] want = new float[w.cols()];
        float[] got = new float[w.cols() + 3];
        for (int r = 0; r < w.rows(); r++) {
          Dequantizer.row(w, r, want, 0);
          CpuMatmul.loadRow(kernels, w, r, got, 3);
          for (int c = 0; c < w.cols(); c++) {
            assertThat(Float.floatToRawIntBits(got[3 + c]))
                .as("%s %d bits, row %d, column %d", w.quant(), bits, r, c)
                .isEqualTo(Float.floatToRawIntBits(want[c]));
          }
        }
      }
    }
  }

  @ParameterizedTest
  @ValueSource(ints = {128, 256, 512})
  void theDequantizerFollowsTheCodeTables(int bits) {
    // With scale 1 the decoded rows are the tables themselves, bit for bit.
    try (Arena arena = Arena.ofShared();
        CpuKernelContext kernels = new CpuKernelContext(bits, 1)) {
      MemorySegment codes = arena.allocate(256);
      for (int i = 0; i < 256; i++) {
        codes.set(ValueLayout.JAVA_BYTE, i, (byte) i);
      }
      float[] row = new float[256];
      CpuMatmul.loadRow(
          kernels,
          new CpuMatrix(codes, DType.F8_E4M3, 1, 256, new Quantization.Fp8Tensor(1f)),
          0,
          row,
          0);
      float[] fp8 = Fp8E4m3.table();
      float[] fp4 = E2m1.table();
      for (int i = 0; i < 256; i++) {
        assertThat(Float.floatToRawIntBits(row[i])).isEqualTo(Float.floatToRawIntBits(fp8[i]));
      }
      MemorySegment one = arena.allocate(512 / 16);
      one.fill((byte) 0x38); // e4m3 1.0
      float[] fp4Row = new float[512];
      CpuMatmul.loadRow(
          kernels,
          new CpuMatrix(codes, DType.U8, 1, 512, new Quantization.Nvfp4(one, 1f)),
          0,
          fp4Row,
          0);
      for (int c = 0; c < 512; c++) {
        int code = c % 2 == 0 ? (c / 2) & 0xf : (c / 2) >>> 4;
        assertThat(Float.floatToRawIntBits(fp4Row[c]))
            .isEqualTo(Float.floatToRawIntBits(fp4[code]));
      }
    }
  }

  @ParameterizedTest
  @ValueSource(ints = {128, 256, 512})
  void productsEqualTheF32KernelOnTheDequantizedRows(int bits) {
    SplittableRandom random = new SplittableRandom(bits);
    try (Arena arena = Arena.ofShared();
        CpuKernelContext one = new CpuKernelContext(bits, 1);
        CpuKernelContext three = new CpuKernelContext(bits, 3);
        CpuKernelContext reference = CpuKernelContext.withReferenceDequantization(bits, 1)) {
      List<CpuMatrix> matrices = new ArrayList<>();
      // Partial FP8 blocks in both directions, columns that are not a multiple of the lanes.
      for (int[] shape : new int[][] {{300, 257}, {5, 64}, {130, 129}, {129, 3}, {1, 385}}) {
        matrices.add(fp8Block(arena, random, shape[0], shape[1], false));
      }
      matrices.add(fp8Tensor(arena, random, 37, 131, 0.02f));
      matrices.add(fp8Tensor(arena, random, 64, 16, 3e37f));
      for (int[] shape : new int[][] {{301, 272}, {3, 16}, {17, 48}, {64, 1024}}) {
        matrices.add(nvfp4(arena, random, shape[0], shape[1], 0.37f));
      }
      matrices.add(nvfp4(arena, random, 33, 64, 3e36f));
      for (CpuMatrix w : matrices) {
        for (int n = 1; n <= 9; n++) {
          float[] x = TestMatrices.randomInputs(n * w.cols(), n + 31L * w.rows());
          float[] want = new float[n * w.rows()];
          CpuMatmul.matmul(reference, want, x, n, w);
          for (CpuKernelContext kernels : new CpuKernelContext[] {one, three}) {
            float[] got = new float[n * w.rows()];
            CpuMatmul.matmul(kernels, got, x, n, w);
            assertSameBits(got, want, "%dx%d %s, %d tokens, %s", w, n, kernels);
          }
        }
      }
    }
  }

  @ParameterizedTest
  @ValueSource(ints = {128, 256, 512})
  void rowRangesAndTokenListsDoNotChangeTheBits(int bits) {
    SplittableRandom random = new SplittableRandom(bits + 1);
    try (Arena arena = Arena.ofShared();
        CpuKernelContext kernels = new CpuKernelContext(bits, 1)) {
      int rows = 261;
      for (CpuMatrix w :
          new CpuMatrix[] {
            fp8Block(arena, random, rows, 200, false), nvfp4(arena, random, rows, 96, 0.01f)
          }) {
        int cols = w.cols();
        int n = 11;
        float[] x = TestMatrices.randomInputs(n * cols, 3);
        float[] all = new float[n * rows];
        CpuMatmul.matmul(kernels, all, x, n, w);
        QuantizedRowKernel decoder = kernels.quantizedKernel(w.dtype());
        RowKernel f32 = kernels.kernel(DType.F32);
        // Gathered, repeated and reordered tokens, over row ranges that start and end anywhere.
        int[] tokens = {7, 0, 10, 3, 3, 9};
        for (int[] range : new int[][] {{0, rows}, {3, 17}, {127, 131}, {128, 129}, {250, 261}}) {
          for (int count = 1; count <= tokens.length; count++) {
            int[] xOffsets = new int[count];
            int[] outOffsets = new int[count];
            for (int t = 0; t < count; t++) {
              xOffsets[t] = tokens[t] * cols;
              outOffsets[t] = t * rows;
            }
            float[] out = new float[count * rows];
            QuantizedRows.rows(decoder, f32, w, range[0], range[1], x, xOffsets, out, outOffsets);
            for (int t = 0; t < count; t++) {
              for (int r = range[0]; r < range[1]; r++) {
                assertThat(Float.floatToRawIntBits(out[t * rows + r]))
                    .as("%s rows %d..%d, token %d of %d", w.quant(), range[0], range[1], t, count)
                    .isEqualTo(Float.floatToRawIntBits(all[tokens[t] * rows + r]));
              }
            }
          }
        }
      }
    }
  }

  @ParameterizedTest
  @ValueSource(ints = {128, 256})
  void nanCodesAndScalesGiveNanWhereTheReferenceDoes(int bits) {
    SplittableRandom random = new SplittableRandom(5);
    try (Arena arena = Arena.ofShared();
        CpuKernelContext kernels = new CpuKernelContext(bits, 1);
        CpuKernelContext reference = CpuKernelContext.withReferenceDequantization(bits, 1)) {
      CpuMatrix fp8 = fp8Block(arena, random, 40, 150, true);
      MemorySegment packed = arena.allocate(40L * 64 / 2);
      for (long i = 0; i < packed.byteSize(); i++) {
        packed.set(ValueLayout.JAVA_BYTE, i, (byte) random.nextInt(256));
      }
      MemorySegment scales = arena.allocate(40L * 64 / 16);
      for (long i = 0; i < scales.byteSize(); i++) {
        scales.set(ValueLayout.JAVA_BYTE, i, (byte) (i % 11 == 0 ? 0x7f : 0x30 + i % 16));
      }
      CpuMatrix fp4 = new CpuMatrix(packed, DType.U8, 40, 64, new Quantization.Nvfp4(scales, 1f));
      for (CpuMatrix w : new CpuMatrix[] {fp8, fp4}) {
        for (int n : new int[] {1, 4, 5}) {
          float[] x = TestMatrices.randomInputs(n * w.cols(), n);
          float[] want = new float[n * w.rows()];
          float[] got = new float[n * w.rows()];
          CpuMatmul.matmul(reference, want, x, n, w);
          CpuMatmul.matmul(kernels, got, x, n, w);
          // NaN payloads may differ by the order a compiled FMA takes its operands.
          assertThat(got).containsExactly(want);
          assertThat(got).contains(Float.NaN);
        }
      }
    }
  }

  private static void assertSameBits(
      float[] got, float[] want, String what, CpuMatrix w, int n, CpuKernelContext kernels) {
    for (int i = 0; i < want.length; i++) {
      if (Float.floatToRawIntBits(got[i]) != Float.floatToRawIntBits(want[i])) {
        assertThat(got[i])
            .as(what + ", output %d", w.rows(), w.cols(), w.quant(), n, kernels, i)
            .isEqualTo(want[i]);
        assertThat(Float.floatToRawIntBits(got[i])).isEqualTo(Float.floatToRawIntBits(want[i]));
      }
    }
  }

  private static CpuMatrix fp8Block(
      Arena arena, SplittableRandom random, int rows, int cols, boolean nanCodes) {
    MemorySegment codes = arena.allocate((long) rows * cols + 1).asSlice(1);
    for (long i = 0; i < codes.byteSize(); i++) {
      int b = random.nextInt(256);
      if (!nanCodes && (b & 0x7f) == 0x7f) {
        b ^= 1;
      }
      if (nanCodes && random.nextInt(500) != 0 && (b & 0x7f) == 0x7f) {
        b ^= 1; // a few NaNs only, so that most outputs stay finite
      }
      codes.set(ValueLayout.JAVA_BYTE, i, (byte) b);
    }
    int blockCols = (cols + 127) / 128;
    int blocks = (rows + 127) / 128 * blockCols;
    MemorySegment scales = arena.allocate(blocks * 4L, 4);
    for (int i = 0; i < blocks; i++) {
      float s = (float) random.nextDouble(1e-3, 1e-1);
      scales.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i, i % 5 == 3 ? -s : s);
    }
    return new CpuMatrix(
        codes, DType.F8_E4M3, rows, cols, new Quantization.Fp8Block(scales, blockCols));
  }

  private static CpuMatrix fp8Tensor(
      Arena arena, SplittableRandom random, int rows, int cols, float scale) {
    CpuMatrix codes = fp8Block(arena, random, rows, cols, false);
    return new CpuMatrix(
        codes.data(), DType.F8_E4M3, rows, cols, new Quantization.Fp8Tensor(scale));
  }

  private static CpuMatrix nvfp4(
      Arena arena, SplittableRandom random, int rows, int cols, float global) {
    MemorySegment packed = arena.allocate((long) rows * cols / 2 + 3).asSlice(3);
    for (long i = 0; i < packed.byteSize(); i++) {
      packed.set(ValueLayout.JAVA_BYTE, i, (byte) random.nextInt(256));
    }
    MemorySegment scales = arena.allocate((long) rows * cols / 16);
    for (long i = 0; i < scales.byteSize(); i++) {
      int b;
      do {
        b = random.nextInt(256);
      } while ((b & 0x7f) == 0x7f);
      scales.set(ValueLayout.JAVA_BYTE, i, (byte) b);
    }
    return new CpuMatrix(packed, DType.U8, rows, cols, new Quantization.Nvfp4(scales, global));
  }
}
