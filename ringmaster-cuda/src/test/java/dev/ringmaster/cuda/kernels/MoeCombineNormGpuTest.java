package dev.ringmaster.cuda.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.backend.cpu.CpuOps;
import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.testing.Compare;
import dev.ringmaster.cuda.testing.Gpu;
import dev.ringmaster.cuda.testing.Rand;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@link MoeKernels#moeCombineRmsNorm} against {@link MoeKernels#moeCombine} followed by {@link
 * RingmasterKernels#rmsNorm} with the residual: the normed rows and the updated residual bit for
 * bit, and within 1e-5 of the CPU (shared row + slot rows + residual, then RMSNorm). Shapes:
 * V2-Lite's (all loads in flight at once), a row wider than two float4 a thread and more than 8
 * slots (slot by slot), a dimension not a multiple of 4 (the strided path); with and without the
 * shared experts' row.
 */
@Tag("gpu")
class MoeCombineNormGpuTest {
  @ParameterizedTest
  @CsvSource({
    // rows, dim, topK, shared
    "1,2048,6,true", // DeepSeek-V2-Lite, one token
    "3,2048,6,false",
    "2,7168,8,true", // DeepSeek-V3's width: 7 float4 a thread
    "5,64,9,true", // more slots than are loaded together
    "4,130,4,true", // dim % 4 != 0
    "1,6,1,false"
  })
  void equalsCombineThenNorm(int rows, int dim, int topK, boolean shared) {
    Rand r = new Rand();
    float[] sharedRow = r.uniform(rows * dim, 1f);
    float[] y = r.uniform(rows * topK * dim, 1f);
    float[] residual = r.uniform(rows * dim, 2f);
    float[] w = r.uniform(dim, 1f);
    float eps = 1e-6f;
    float[] sum = residual.clone();
    for (int t = 0; t < rows; t++) {
      for (int d = 0; d < dim; d++) {
        float v = shared ? sharedRow[t * dim + d] : 0f;
        for (int k = 0; k < topK; k++) {
          v += y[(t * topK + k) * dim + d];
        }
        sum[t * dim + d] += v;
      }
    }
    float[] want = sum.clone();
    CpuOps.rmsNorm(want, 0, rows, dim, dim, w, eps);
    String seed = "seed " + r.seed();
    Gpu.run(
        s -> {
          RingmasterKernels k = Gpu.kernels();
          DeviceBuffer dy = s.f32(y);
          DeviceBuffer dw = s.f32(w);
          // Two launches: the combine into the shared row (or a poisoned one, overwritten), then
          // the norm with the residual.
          DeviceBuffer combined = shared ? s.f32(sharedRow) : s.poisoned((long) rows * dim);
          DeviceBuffer res1 = s.f32(residual);
          DeviceBuffer out1 = s.poisoned((long) rows * dim);
          k.moe().moeCombine(s.stream(), combined.ptr(), dy.ptr(), rows, dim, topK, shared);
          k.rmsNorm(
              s.stream(),
              out1.ptr(),
              dim,
              res1.ptr(),
              dim,
              combined.ptr(),
              dim,
              dw.ptr(),
              rows,
              dim,
              eps);
          // One launch.
          DeviceBuffer sharedIn = s.f32(sharedRow);
          DeviceBuffer res2 = s.f32(residual);
          DeviceBuffer out2 = s.poisoned((long) rows * dim);
          k.moe()
              .moeCombineRmsNorm(
                  s.stream(),
                  out2.ptr(),
                  res2.ptr(),
                  shared ? sharedIn.ptr() : 0,
                  dy.ptr(),
                  topK,
                  dw.ptr(),
                  rows,
                  dim,
                  eps);
          float[] got = s.read(out2, rows * dim);
          Compare.assertClose("normed rows, " + seed, got, want, 1e-5);
          Compare.assertClose("residual, " + seed, s.read(res2, rows * dim), sum, 1e-5);
          assertThat(Compare.bits(got))
              .as("normed rows against the two launches, %s", seed)
              .isEqualTo(Compare.bits(s.read(out1, rows * dim)));
          assertThat(Compare.bits(s.read(res2, rows * dim)))
              .as("residual against the two launches, %s", seed)
              .isEqualTo(Compare.bits(s.read(res1, rows * dim)));
        });
  }
}
