package dev.ringmaster.backend.cpu.model;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.backend.DType;
import dev.ringmaster.backend.cpu.CpuKernelContext;
import dev.ringmaster.backend.cpu.CpuMatrix;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** Two linears run as one parallel region give the bits of two separate calls. */
class LinearPairTest {
  @Test
  void applyBothMatchesTwoApplyCallsBitForBit() {
    try (Arena arena = Arena.ofShared();
        CpuKernelContext kernels = new CpuKernelContext(0, 2)) {
      SplittableRandom random = new SplittableRandom(7);
      int in = 256;
      Linear a = new Linear(matrix(arena, random, 768, in), null, kernels);
      Linear b = new Linear(matrix(arena, random, 80, in), floats(random, 80), kernels);
      for (int n : new int[] {1, 4, 16}) {
        float[] x = floats(random, n * in);
        float[] aOne = new float[n * a.out()];
        float[] bOne = new float[n * b.out()];
        a.apply(aOne, x, n);
        b.apply(bOne, x, n);
        float[] aBoth = new float[n * a.out()];
        float[] bBoth = new float[n * b.out()];
        Linear.applyBoth(a, aBoth, b, bBoth, x, n);
        assertThat(aBoth).as("first linear, %d tokens", n).containsExactly(aOne);
        assertThat(bBoth).as("second linear (with bias), %d tokens", n).containsExactly(bOne);
      }
    }
  }

  private static CpuMatrix matrix(Arena arena, SplittableRandom random, int rows, int cols) {
    MemorySegment data = arena.allocate((long) rows * cols * 2, 64);
    for (long i = 0; i < (long) rows * cols; i++) {
      float v = (float) (random.nextDouble() * 2 - 1);
      data.setAtIndex(
          ValueLayout.JAVA_SHORT_UNALIGNED, i, (short) (Float.floatToIntBits(v) >>> 16));
    }
    return new CpuMatrix(data, DType.BF16, rows, cols);
  }

  private static float[] floats(SplittableRandom random, int count) {
    float[] x = new float[count];
    for (int i = 0; i < count; i++) {
      x[i] = (float) (random.nextDouble() * 2 - 1);
    }
    return x;
  }
}
