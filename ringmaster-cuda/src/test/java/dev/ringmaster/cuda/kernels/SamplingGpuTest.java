package dev.ringmaster.cuda.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.testing.Gpu;
import dev.ringmaster.cuda.testing.Rand;
import dev.ringmaster.engine.Sampler;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The greedy arg-max kernel against the CPU's. */
@Tag("gpu")
class SamplingGpuTest {
  @ParameterizedTest
  @CsvSource({"1,7", "4,129280", "9,1000", "3,151936", "2,102400", "3,1002", "1,4"})
  void argmaxMatchesTheCpuSampler(int rows, int vocab) {
    Rand r = new Rand();
    float[] logits = r.uniform(rows * vocab, 10f);
    logits[vocab - 1] = 11f; // a maximum at the very end of row 0
    if (rows > 1 && vocab > 8) {
      // a tie for the maximum of row 1, in different 16-byte loads: the lower index wins
      logits[vocab + vocab - 3] = 12f;
      logits[vocab + 5] = 12f;
    }
    int[] want = new int[rows];
    for (int i = 0; i < rows; i++) {
      want[i] = Sampler.argmax(logits, i * vocab, vocab);
    }
    Gpu.run(
        s -> {
          DeviceBuffer out = s.alloc(4L * rows);
          Gpu.kernels().argmax(s.stream(), out.ptr(), s.f32(logits).ptr(), rows, vocab);
          assertThat(s.readInts(out, rows)).as("seed %d", r.seed()).containsExactly(want);
        });
  }
}
