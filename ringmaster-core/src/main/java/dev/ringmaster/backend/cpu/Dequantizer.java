package dev.ringmaster.backend.cpu;

import dev.ringmaster.backend.quant.E2m1;
import dev.ringmaster.backend.quant.Fp8E4m3;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Decodes rows of quantized {@link CpuMatrix} to f32, exactly as {@link Quantization} defines (one
 * f32 multiply per element for FP8; for NVFP4 the scale product first, then one multiply). The
 * reference of every quantized kernel; the CPU matmul's vector decoders ({@code
 * Fp8RowKernelTemplate}, {@code Nvfp4RowKernelTemplate}) give its bits.
 */
public final class Dequantizer {
  private static final float[] FP8 = Fp8E4m3.table();
  private static final float[] FP4 = E2m1.table();

  private Dequantizer() {}

  /** Writes row {@code r} of quantized {@code w} as f32 into {@code dst} from {@code off}. */
  public static void row(CpuMatrix w, int r, float[] dst, int off) {
    int cols = w.cols();
    switch (w.quant()) {
      case Quantization.Fp8Block b -> {
        byte[] codes = codes(w.data(), (long) r * cols, cols);
        long scaleRow = (long) (r / Quantization.FP8_BLOCK) * b.scaleCols();
        for (int cb = 0; cb < b.scaleCols(); cb++) {
          float s = b.scales().get(Numerics.F32_LE, (scaleRow + cb) * 4);
          int c0 = cb * Quantization.FP8_BLOCK;
          int c1 = Math.min(cols, c0 + Quantization.FP8_BLOCK);
          for (int c = c0; c < c1; c++) {
            dst[off + c] = FP8[codes[c] & 0xff] * s;
          }
        }
      }
      case Quantization.Fp8Tensor t -> {
        byte[] codes = codes(w.data(), (long) r * cols, cols);
        float s = t.scale();
        for (int c = 0; c < cols; c++) {
          dst[off + c] = FP8[codes[c] & 0xff] * s;
        }
      }
      case Quantization.Nvfp4 n -> {
        int groups = cols / Quantization.NVFP4_GROUP;
        byte[] packed = codes(w.data(), (long) r * (cols / 2), cols / 2);
        byte[] scales = codes(n.scales(), (long) r * groups, groups);
        float global = n.globalScale();
        for (int g = 0; g < groups; g++) {
          float s = FP8[scales[g] & 0xff] * global;
          int base = off + g * Quantization.NVFP4_GROUP;
          for (int k = 0; k < Quantization.NVFP4_GROUP / 2; k++) {
            int b = packed[g * (Quantization.NVFP4_GROUP / 2) + k];
            dst[base + 2 * k] = FP4[b & 0xf] * s;
            dst[base + 2 * k + 1] = FP4[(b >>> 4) & 0xf] * s;
          }
        }
      }
      case null -> throw new IllegalArgumentException("matrix is not quantized");
    }
  }

  /** The whole matrix as f32, row-major (tests and references). */
  public static float[] matrix(CpuMatrix w) {
    float[] out = new float[Math.multiplyExact(w.rows(), w.cols())];
    for (int r = 0; r < w.rows(); r++) {
      row(w, r, out, r * w.cols());
    }
    return out;
  }

  private static byte[] codes(MemorySegment seg, long offset, int n) {
    byte[] out = new byte[n];
    MemorySegment.copy(seg, ValueLayout.JAVA_BYTE, offset, out, 0, n);
    return out;
  }
}
