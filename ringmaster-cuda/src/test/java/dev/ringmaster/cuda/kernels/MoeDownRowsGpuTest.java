package dev.ringmaster.cuda.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.cuda.driver.CudaDriver;
import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.testing.Compare;
import dev.ringmaster.cuda.testing.Gpu;
import dev.ringmaster.cuda.testing.Rand;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The CUDA-core routed experts with 2 and 4 down-projection rows per warp ({@link
 * MoeKernels#useMoeDownRowsPerWarp}) against 1 (one row per warp): every pair's weighted output row
 * and the combined output bit for bit, and the output within the CPU reference's 1e-4 (as
 * MoeGpuTest). Shapes: hidden (the down rows) not a multiple of 2 or 4, inter (the down K) not a
 * multiple of 256 and not a multiple of 8 (the scalar path), tokens that give an expert 1, up to 4,
 * up to 8 and more than 8 pairs (several passes).
 */
@Tag("gpu")
class MoeDownRowsGpuTest {
  @ParameterizedTest
  @CsvSource({
    // tokens, experts, topK, hidden, inter, tokens sent to expert 0
    "1,8,6,2048,1408,0", // DeepSeek-V2-Lite's expert shape (8 experts keep the weights small)
    "2,8,6,2048,1408,0",
    "4,8,6,2048,1408,4",
    "3,8,2,37,40,0",
    "9,10,4,130,36,9", // inter % 8 != 0; 9 pairs on expert 0: passes of 8 and 1
    "33,16,4,66,176,20",
    "5,12,3,258,1000,5",
    "7,6,2,5,13,3" // hidden 5: the last warp holds 1 row of its 2 or 4
  })
  void rowsPerWarpAreBitIdentical(int n, int e, int k, int hidden, int inter, int hot) {
    Rand r = new Rand();
    Rand.Bf16 w13 = r.bf16(e * 2 * inter * hidden, 0.1f);
    Rand.Bf16 w2 = r.bf16(e * hidden * inter, 0.1f);
    float[] x = r.uniform(n * hidden, 1f);
    int[] experts = new int[n * k];
    float[] weights = new float[n * k];
    MoeGpuTest.route(r, n, e, k, hot, experts, weights);
    float[] want =
        MoeGpuTest.reference(x, w13.values(), w2.values(), experts, weights, n, k, hidden, inter);
    String seed = "seed " + r.seed();
    int pairs = n * k;
    Gpu.run(
        s -> {
          RingmasterKernels kk = Gpu.kernels();
          int before = kk.moe().moeDownRowsPerWarp();
          long w13d = s.bf16(w13.bits()).ptr();
          long w2d = s.bf16(w2.bits()).ptr();
          long xd = s.f32(x).ptr();
          long ed = s.i32(experts).ptr();
          long wd = s.f32(weights).ptr();
          int[] rowsPerWarp = {1, 2, 4};
          int[][] pairRows = new int[rowsPerWarp.length][];
          int[][] outs = new int[rowsPerWarp.length][];
          try {
            for (int v = 0; v < rowsPerWarp.length; v++) {
              kk.moe().useMoeDownRowsPerWarp(rowsPerWarp[v]);
              try (MoeWorkspace ws = new MoeWorkspace(n, e, k, hidden, inter)) {
                CudaDriver.get().memsetD8Async(ws.h.ptr(), 0xff, ws.h.bytes(), s.stream().handle());
                ws.y.poison(s.stream());
                DeviceBuffer out = s.poisoned((long) n * hidden);
                kk.moe()
                    .moeExpertsFused(
                        s.stream(), ws, out.ptr(), xd, w13d, w2d, ed, wd, n, hidden, inter, false);
                float[] got = s.read(out, n * hidden);
                Compare.assertClose(rowsPerWarp[v] + " rows per warp, " + seed, got, want, 1e-4);
                pairRows[v] = Compare.bits(s.read(ws.y, pairs * hidden));
                outs[v] = Compare.bits(got);
              }
            }
          } finally {
            kk.moe().useMoeDownRowsPerWarp(before);
          }
          for (int v = 1; v < rowsPerWarp.length; v++) {
            assertThat(pairRows[v])
                .as("pair output rows, %d rows per warp, %s", rowsPerWarp[v], seed)
                .isEqualTo(pairRows[0]);
            assertThat(outs[v])
                .as("combined output, %d rows per warp, %s", rowsPerWarp[v], seed)
                .isEqualTo(outs[0]);
          }
        });
  }
}
