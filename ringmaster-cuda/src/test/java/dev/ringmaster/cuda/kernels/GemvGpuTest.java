package dev.ringmaster.cuda.kernels;

import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.testing.Compare;
import dev.ringmaster.cuda.testing.Gpu;
import dev.ringmaster.cuda.testing.Rand;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

@Tag("gpu")
class GemvGpuTest {
  @ParameterizedTest
  @CsvSource({
    "1,8,1",
    "37,72,1",
    "100,4096,3",
    "513,1000,2",
    "64,264,5",
    "256,2048,9",
    "130,77,4",
    "2048,7168,1"
  })
  void gemvMatchesReference(int m, int k, int n) {
    Rand r = new Rand();
    Rand.Bf16 w = r.bf16(m * k, 0.5f);
    float[] x = r.uniform(n * k, 1f);
    float[] want = reference(w.values(), x, m, k, n);
    Gpu.run(
        s -> {
          DeviceBuffer y = s.poisoned((long) n * m);
          Gpu.kernels().gemv(s.stream(), y.ptr(), s.bf16(w.bits()).ptr(), s.f32(x).ptr(), m, k, n);
          Compare.assertClose("gemv seed " + r.seed(), s.read(y, n * m), want, 1e-5);
        });
  }

  /** {@code y[t, i] = W[i] . x[t]} in f64 for {@code n} tokens ({@code W [m, k]}), as floats. */
  static float[] reference(float[] w, float[] x, int m, int k, int n) {
    float[] y = new float[n * m];
    for (int t = 0; t < n; t++) {
      for (int i = 0; i < m; i++) {
        double s = 0;
        for (int c = 0; c < k; c++) {
          s += (double) w[i * k + c] * x[t * k + c];
        }
        y[t * m + i] = (float) s;
      }
    }
    return y;
  }
}
