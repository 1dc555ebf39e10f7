package dev.ringmaster.cuda.kernels;

import dev.ringmaster.cuda.blas.CublasHandle;
import dev.ringmaster.cuda.driver.CudaGraph;
import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.testing.Compare;
import dev.ringmaster.cuda.testing.Gpu;
import dev.ringmaster.cuda.testing.Rand;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

@Tag("gpu")
class CublasGpuTest {
  static float[] reference(float[] x, float[] w, int n, int m, int k) {
    float[] y = new float[n * m];
    for (int t = 0; t < n; t++) {
      for (int r = 0; r < m; r++) {
        double s = 0;
        for (int c = 0; c < k; c++) {
          s += (double) x[t * k + c] * w[r * k + c];
        }
        y[t * m + r] = (float) s;
      }
    }
    return y;
  }

  @ParameterizedTest
  @CsvSource({"1,64,128", "7,96,200", "33,130,72", "128,256,512"})
  void bf16LinearMatchesReferenceDirectAndCaptured(int n, int m, int k) {
    Rand r = new Rand();
    Rand.Bf16 x = r.bf16(n * k, 1f);
    Rand.Bf16 w = r.bf16(m * k, 0.5f);
    float[] want = reference(x.values(), w.values(), n, m, k);
    Gpu.run(
        s -> {
          DeviceBuffer dx = s.bf16(x.bits());
          DeviceBuffer dw = s.bf16(w.bits());
          DeviceBuffer y = s.poisoned((long) n * m);
          try (CublasHandle blas = new CublasHandle(s.stream())) {
            blas.linear(y.ptr(), dx.ptr(), dw.ptr(), n, m, k, false);
            Compare.assertClose("gemm seed " + r.seed(), s.read(y, n * m), want, 1e-3);
            y.poison(s.stream());
            try (CudaGraph g =
                s.stream()
                    .capture(() -> blas.linear(y.ptr(), dx.ptr(), dw.ptr(), n, m, k, false))) {
              g.launch(s.stream());
              Compare.assertClose("captured gemm", s.read(y, n * m), want, 1e-3);
            }
            // Batched: two copies of the problem with the second weight negated.
            int batch = 2;
            short[] w2 = new short[2 * m * k];
            float[] want2 = new float[2 * n * m];
            System.arraycopy(w.bits(), 0, w2, 0, m * k);
            for (int i = 0; i < m * k; i++) {
              w2[m * k + i] = (short) (w.bits()[i] ^ 0x8000);
            }
            short[] x2 = new short[2 * n * k];
            System.arraycopy(x.bits(), 0, x2, 0, n * k);
            System.arraycopy(x.bits(), 0, x2, n * k, n * k);
            for (int i = 0; i < n * m; i++) {
              want2[i] = want[i];
              want2[n * m + i] = -want[i];
            }
            DeviceBuffer bx = s.bf16(x2);
            DeviceBuffer bw = s.bf16(w2);
            DeviceBuffer by = s.poisoned(2L * n * m);
            blas.linearBatched(
                by.ptr(),
                (long) n * m,
                bx.ptr(),
                (long) n * k,
                bw.ptr(),
                (long) m * k,
                n,
                m,
                k,
                batch);
            Compare.assertClose("batched gemm", s.read(by, 2 * n * m), want2, 1e-3);
          }
        });
  }
}
