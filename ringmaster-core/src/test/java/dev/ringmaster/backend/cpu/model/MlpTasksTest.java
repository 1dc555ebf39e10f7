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

/** An MLP run as token-block tasks gives the bits of the whole-step form, on any thread count. */
class MlpTasksTest {
  @Test
  void blockTasksMatchTheWholeStepMlpBitForBit() {
    for (int threads : new int[] {1, 2, 3}) {
      try (Arena arena = Arena.ofShared();
          CpuKernelContext kernels = new CpuKernelContext(0, threads)) {
        SplittableRandom random = new SplittableRandom(5);
        int hidden = 256;
        int inter = 96;
        DenseMlp mlp =
            new DenseMlp(
                new Linear(matrix(arena, random, inter, hidden), null, kernels),
                new Linear(matrix(arena, random, inter, hidden), floats(random, inter), kernels),
                new Linear(matrix(arena, random, hidden, inter), floats(random, hidden), kernels));
        MlpTasks tasks = new MlpTasks(kernels);
        for (int n : new int[] {1, 5, 16, 33, 70}) {
          float[] x = floats(random, n * hidden);
          float[] whole = new float[n * hidden];
          mlp.forward(whole, x, n);
          for (int round = 0; round < 3; round++) {
            float[] blocks = new float[n * hidden];
            tasks.forward(mlp, blocks, x, n);
            assertThat(blocks).as("%d threads, %d tokens", threads, n).containsExactly(whole);
          }
          // Any rows of x, in any order, as one block.
          int[] rows = {n - 1, 0, n / 2};
          float[] picked = new float[rows.length * hidden];
          mlp.forwardRowsHere(picked, x, rows);
          for (int r = 0; r < rows.length; r++) {
            for (int d = 0; d < hidden; d++) {
              assertThat(picked[r * hidden + d]).isEqualTo(whole[rows[r] * hidden + d]);
            }
          }
        }
      }
    }
  }

  private static CpuMatrix matrix(Arena arena, SplittableRandom random, int rows, int cols) {
    MemorySegment data = arena.allocate((long) rows * cols * 2, 64);
    for (long i = 0; i < (long) rows * cols; i++) {
      float v = (float) (random.nextDouble() * 0.2 - 0.1);
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
