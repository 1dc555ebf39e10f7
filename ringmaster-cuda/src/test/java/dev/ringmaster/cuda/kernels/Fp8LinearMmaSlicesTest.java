package dev.ringmaster.cuda.kernels;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** The tensor-core FP8 linear's K slicing and scratch bound (CPU only: no kernel runs). */
class Fp8LinearMmaSlicesTest {
  @Test
  void v2LiteShapesSliceKInWholeScaleBlocksTowardTheGridTarget() {
    // rows, K, slice columns, slices: kv_a, q, o, shared gate|up, shared down, dense down, dense
    // gate|up (342 row blocks: no split).
    int[][] cases = {
      {576, 2048, 256, 8},
      {3072, 2048, 384, 6},
      {2048, 2048, 256, 8},
      {5632, 2048, 768, 3},
      {2048, 2816, 384, 8},
      {2048, 10944, 1408, 8},
      {21888, 2048, 2048, 1},
      {64, 72, 128, 1},
    };
    for (int[] c : cases) {
      assertThat(Fp8Kernels.linearMmaSlice(c[0], c[1]))
          .as("slice of %dx%d", c[0], c[1])
          .isEqualTo(c[2]);
      assertThat(Fp8Kernels.linearMmaSplits(c[0], c[1]))
          .as("slices of %dx%d", c[0], c[1])
          .isEqualTo(c[3]);
    }
  }

  @Test
  void theScratchBoundHoldsForEveryShape() {
    long bound = Fp8Kernels.linearMmaMaxScratchFloats(64);
    for (int m = 16; m <= 40_000; m += 16) {
      for (int k : new int[] {8, 128, 200, 1024, 2048, 7168, 18432}) {
        long need = Fp8Kernels.linearMmaScratchFloats(m, k, 64);
        if (need > bound) {
          throw new AssertionError(m + "x" + k + " needs " + need + " > " + bound);
        }
        int slice = Fp8Kernels.linearMmaSlice(m, k);
        assertThat(slice % 128).isZero();
        assertThat((long) (Fp8Kernels.linearMmaSplits(m, k) - 1) * slice).isLessThan(k);
      }
    }
  }

  @Test
  void shapesTheKernelCannotTakeAreNamed() {
    assertThat(Fp8Kernels.linearMmaSupports(2048, 576)).isTrue();
    assertThat(Fp8Kernels.linearMmaSupports(2044, 576)).isFalse();
    assertThat(Fp8Kernels.linearMmaSupports(2048, 100)).isFalse();
    assertThatThrownBy(() -> Fp8Kernels.checkLinearMma(2048, 100))
        .hasMessageContaining("parts of 100");
  }
}
