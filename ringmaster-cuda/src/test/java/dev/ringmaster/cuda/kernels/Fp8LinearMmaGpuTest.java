package dev.ringmaster.cuda.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.backend.cpu.Numerics;
import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.kernels.Fp8KernelsGpuTest.Fp8Stack;
import dev.ringmaster.cuda.testing.Compare;
import dev.ringmaster.cuda.testing.DeviceScope;
import dev.ringmaster.cuda.testing.Gpu;
import dev.ringmaster.cuda.testing.Rand;
import java.util.Arrays;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The tensor-core FP8 linear ({@link Fp8Kernels#linearMma}) against the CPU's dequantizing
 * reference ({@link Fp8KernelsGpuTest#stack}: each part dequantized by {@code Dequantizer}) times
 * the activations rounded to bf16 (as the kernel stages them), in f64. Tolerance 1e-4 relative:
 * exactly decoded codes and bf16 activations, so only the f32 accumulation differs (tensor-core
 * sums per 128-k block, the block's scale, the K slices added in order), as the FP8 experts' bound.
 * Shapes: V2-Lite's kv_a (576 rows: 9 row blocks, 8 K slices), rows and K ending inside a 64-row
 * tile or a 128-block, K % 16 == 8 (two 8-byte loads per 16 codes), stacked parts (the fused
 * gate|up layout), one K slice (more row blocks than the grid target), 5 to 64 tokens (one or two
 * passes of 32, the last partial).
 */
@Tag("gpu")
class Fp8LinearMmaGpuTest {
  static float[] bf16Rounded(float[] x) {
    float[] r = new float[x.length];
    for (int i = 0; i < x.length; i++) {
      r[i] = Numerics.bf16ToFloat(Numerics.floatToBf16(x[i]));
    }
    return r;
  }

  static float[] run(DeviceScope s, Fp8Stack w, float[] x, int n) {
    int m = w.rows();
    int k = w.k();
    DeviceBuffer y = s.poisoned((long) n * m);
    long floats = Math.max(1, Fp8Kernels.linearMmaScratchFloats(m, k, n));
    DeviceBuffer partials = s.poisoned(floats);
    Gpu.kernels()
        .fp8()
        .linearMma(
            s.stream(),
            y.ptr(),
            Fp8KernelsGpuTest.upload(s, w.codes()).ptr(),
            s.f32(w.scales()).ptr(),
            w.partRows(),
            s.f32(x).ptr(),
            m,
            k,
            n,
            partials.ptr(),
            floats);
    return s.read(y, n * m);
  }

  @ParameterizedTest
  @CsvSource({
    // parts, rows per part, K, tokens
    "1,576,2048,8", // kv_a_proj_with_mqa: a partial 64-row tile and 128-row block, 8 K slices
    "1,576,2048,33", // two passes, the second of one token
    "1,2048,2048,32", // o_proj
    "2,144,2048,5", // a gate|up pair: parts of 144 rows (a 16-row multiple, not of 64 or 128)
    "1,112,200,17", // K % 16 == 8 and K ending inside a block; 112 rows: a partial tile
    "1,48,72,64", // K below one block; two full passes
    "1,16,8,6", // one 16-row tile, one 8-column load
    "1,17024,256,24" // more row blocks than the grid target: one K slice, no partials
  })
  void linearMatchesTheDequantizedReference(int parts, int partRows, int k, int n) {
    Rand r = new Rand();
    Fp8Stack w = Fp8KernelsGpuTest.stack(r, parts, partRows, k);
    int m = w.rows();
    float[] x = r.uniform(n * k, 1f);
    float[] want = GemvGpuTest.reference(w.values(), bf16Rounded(x), m, k, n);
    Gpu.run(
        s ->
            Compare.assertClose(
                "fp8 mma linear "
                    + parts
                    + "x"
                    + partRows
                    + "x"
                    + k
                    + " at "
                    + n
                    + " tokens ("
                    + Fp8Kernels.linearMmaSplits(m, k)
                    + " K slices), seed "
                    + r.seed(),
                run(s, w, x, n),
                want,
                1e-4));
  }

  @Test
  void aTokensRowDoesNotDependOnTheBatch() {
    Rand r = new Rand();
    Fp8Stack w = Fp8KernelsGpuTest.stack(r, 2, 1408, 2048);
    int m = w.rows();
    int k = w.k();
    float[] x = r.uniform(64 * k, 1f);
    Gpu.run(
        s -> {
          float[] all = run(s, w, x, 64);
          for (int n : new int[] {5, 8, 13, 32, 37}) {
            float[] some = run(s, w, Arrays.copyOf(x, n * k), n);
            assertThat(Compare.bits(some))
                .as("the first %d tokens' rows alone and in a batch of 64, seed %d", n, r.seed())
                .isEqualTo(Compare.bits(Arrays.copyOf(all, n * m)));
          }
        });
  }
}
