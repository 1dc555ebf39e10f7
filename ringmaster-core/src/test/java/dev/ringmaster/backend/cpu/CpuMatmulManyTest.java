package dev.ringmaster.backend.cpu;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringmaster.backend.DType;
import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.List;
import org.assertj.core.data.Offset;
import org.junit.jupiter.api.Test;

/** {@link CpuMatmul#matmulMany}: several experts with their own token lists in one region. */
class CpuMatmulManyTest {
  @Test
  void expertsWithTokenListsMatchReference() {
    int cols = 300;
    int tokens = 11;
    float[] x = TestMatrices.randomInputs(tokens * cols, 1);
    int[][] routes = {{0, 3, 7}, {10}, {2, 2, 5, 1, 0, 9, 8, 4}, {6, 3}, {}, {1, 2, 3, 4, 5}};
    DType[] dtypes = {DType.BF16, DType.F32, DType.F16, DType.BF16, DType.F32, DType.BF16};
    int[] rows = {96, 1, 257, 33, 64, 700};
    try (Arena arena = Arena.ofShared();
        CpuKernelContext kernels = new CpuKernelContext(0, 3)) {
      List<CpuMatmul.Job> jobs = new ArrayList<>();
      for (int e = 0; e < routes.length; e++) {
        CpuMatrix w = TestMatrices.random(arena, dtypes[e], rows[e], cols, 100 + e);
        jobs.add(new CpuMatmul.Job(w, x, routes[e], new float[routes[e].length * rows[e]]));
      }
      // As after timing slow products: every call is worth splitting, so the chunks run parallel.
      kernels.pool().costModel().observe(1, 1_000_000, false);
      assertThat(MatmulPlan.of(jobs, kernels).parallel()).isTrue();
      CpuMatmul.matmulMany(kernels, jobs);
      for (CpuMatmul.Job job : jobs) {
        CpuMatrix w = job.w();
        for (int t = 0; t < job.n(); t++) {
          for (int r = 0; r < w.rows(); r++) {
            double[] ref = TestMatrices.reference(w, r, x, job.xRows()[t] * cols);
            int lanes = kernels.vectorBits() / 32;
            assertThat((double) job.out()[t * w.rows() + r])
                .isCloseTo(
                    ref[0], Offset.offset(TestMatrices.bound(w.dtype(), cols, lanes, ref[1])));
          }
        }
      }
    }
  }

  @Test
  void rejectsTokenRowsOutsideInput() {
    try (Arena arena = Arena.ofShared()) {
      CpuMatrix w = TestMatrices.random(arena, DType.F32, 4, 8, 1);
      assertThatThrownBy(() -> new CpuMatmul.Job(w, new float[16], new int[] {2}, new float[4]))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("token row 2");
      assertThatThrownBy(() -> new CpuMatmul.Job(w, new float[16], new int[] {0, 1}, new float[7]))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("needs 8");
    }
  }

  @Test
  void productsGoParallelOnlyWhenTheCostModelSaysSplittingPays() {
    try (Arena arena = Arena.ofShared();
        CpuKernelContext kernels = new CpuKernelContext(0, 2)) {
      CpuThreadPool pool = kernels.pool();
      CpuMatrix small = TestMatrices.random(arena, DType.BF16, 64, 64, 1);
      CpuMatrix big = TestMatrices.random(arena, DType.BF16, 1024, 256, 1);
      List<CpuMatmul.Job> smallJobs =
          List.of(CpuMatmul.Job.of(small, new float[64], 1, new float[64]));
      List<CpuMatmul.Job> bigJobs =
          List.of(CpuMatmul.Job.of(big, new float[256], 1, new float[1024]));
      assertThat(MatmulPlan.of(bigJobs, kernels).parallel()).as("nothing timed yet").isFalse();
      // A rate at which splitting 64x64 saves a quarter of a region and 1024x256 saves 16.
      double rate = pool.costModel().regionNanos() / (64 * 64 * 0.5) / 4;
      pool.costModel().observe(1000, (long) Math.ceil(rate * 1000), false);
      assertThat(MatmulPlan.of(smallJobs, kernels).parallel()).isFalse();
      assertThat(MatmulPlan.of(bigJobs, kernels).parallel()).isTrue();
    }
  }

  @Test
  void confinedWeightsRunOnTheCallingThread() {
    try (Arena arena = Arena.ofConfined();
        CpuKernelContext kernels = new CpuKernelContext(0, 3)) {
      CpuMatrix w = TestMatrices.random(arena, DType.F32, 512, 1024, 1);
      float[] x = TestMatrices.randomInputs(1024, 2);
      List<CpuMatmul.Job> jobs = List.of(CpuMatmul.Job.of(w, x, 1, new float[512]));
      assertThat(MatmulPlan.of(jobs, kernels).parallel()).isFalse();
      CpuMatmul.matmulMany(kernels, jobs);
      double[] ref = TestMatrices.reference(w, 511, x, 0);
      assertThat((double) jobs.get(0).out()[511]).isCloseTo(ref[0], Offset.offset(1e-4));
    }
  }
}
