package dev.ringmaster.backend.cpu;

import dev.ringmaster.backend.DType;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.SplittableRandom;

/** Random weights and inputs, and a double-precision reference product. */
final class TestMatrices {
  private TestMatrices() {}

  /**
   * A random matrix at an odd byte offset of a native segment, as a mapped safetensors file may
   * place it. f16 values span many binades, subnormals included.
   */
  static CpuMatrix random(Arena arena, DType dtype, int rows, int cols, long seed) {
    long bytes = (long) rows * cols * dtype.bytes();
    MemorySegment data = arena.allocate(bytes + 1, 8).asSlice(1, bytes);
    SplittableRandom random = new SplittableRandom(seed);
    for (long i = 0; i < (long) rows * cols; i++) {
      float v = (float) (random.nextDouble() * 2 - 1);
      if (dtype == DType.F16 && random.nextInt(8) == 0) {
        v *= (float) Math.pow(2, -random.nextInt(26));
      }
      Numerics.store(data, dtype, i, v);
    }
    return new CpuMatrix(data, dtype, rows, cols);
  }

  static float[] randomInputs(int count, long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    float[] x = new float[count];
    for (int i = 0; i < count; i++) {
      x[i] = (float) (random.nextDouble() * 2 - 1);
    }
    return x;
  }

  /** Exact-as-double product of one weight row with one token, and the sum of |w·x|. */
  static double[] reference(CpuMatrix w, int row, float[] x, int xOffset) {
    double sum = 0;
    double magnitude = 0;
    for (int c = 0; c < w.cols(); c++) {
      double p = (double) w.get(row, c) * x[xOffset + c];
      sum += p;
      magnitude += Math.abs(p);
    }
    return new double[] {sum, magnitude};
  }

  /**
   * Error bound for an f32 sum of {@code cols} products of {@code dtype} weights: the f32 and f16
   * kernels split it over {@code lanes} accumulators, so each result passes through at most
   * cols/lanes + 2·lanes + 2 roundings (lane sums, the lane reduction in any order, the scalar
   * tail); the bf16 kernels sum one chain of cols roundings. Each rounding is of relative size at
   * most 2^-24, so the error is at most that count times 2^-24 times the sum of |w·x| (Higham's
   * gamma_m, to first order).
   */
  static double bound(DType dtype, int cols, int lanes, double magnitude) {
    double roundings = dtype == DType.BF16 ? cols + 1 : cols / (double) lanes + 2.0 * lanes + 2;
    return roundings * 0x1p-24 * magnitude + Float.MIN_VALUE;
  }
}
