package dev.ringmaster.cuda.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.backend.cpu.CpuOps;
import dev.ringmaster.backend.cpu.Numerics;
import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.testing.Compare;
import dev.ringmaster.cuda.testing.Gpu;
import dev.ringmaster.cuda.testing.Rand;
import dev.ringmaster.model.arch.RopeTable;
import dev.ringmaster.model.config.RopeConfig;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

@Tag("gpu")
class ElementwiseGpuTest {
  @ParameterizedTest
  @CsvSource({"1,8,16", "5,100,72", "64,1000,2048"})
  void embeddingGathersRows(int n, int vocab, int hidden) {
    Rand r = new Rand();
    Rand.Bf16 table = r.bf16(vocab * hidden, 1f);
    int[] ids = new int[n];
    float[] want = new float[n * hidden];
    for (int t = 0; t < n; t++) {
      ids[t] = r.nextInt(vocab);
      System.arraycopy(table.values(), ids[t] * hidden, want, t * hidden, hidden);
    }
    Gpu.run(
        s -> {
          DeviceBuffer out = s.poisoned((long) n * hidden);
          Gpu.kernels()
              .embedding(
                  s.stream(), out.ptr(), s.bf16(table.bits()).ptr(), s.i32(ids).ptr(), n, hidden);
          assertThat(s.read(out, n * hidden)).containsExactly(want);
        });
  }

  @ParameterizedTest
  @CsvSource({"1,7", "3,1408", "17,333"})
  void siluMulOnFusedGateUpRows(int rows, int inter) {
    Rand r = new Rand();
    float[] gu = r.uniform(rows * 2 * inter, 6f);
    float[] want = new float[rows * inter];
    for (int i = 0; i < rows; i++) {
      float[] g = new float[inter];
      float[] u = new float[inter];
      float[] o = new float[inter];
      System.arraycopy(gu, i * 2 * inter, g, 0, inter);
      System.arraycopy(gu, i * 2 * inter + inter, u, 0, inter);
      CpuOps.siluMul(o, g, u, inter);
      System.arraycopy(o, 0, want, i * inter, inter);
    }
    Gpu.run(
        s -> {
          DeviceBuffer in = s.f32(gu);
          DeviceBuffer out = s.poisoned((long) rows * inter);
          Gpu.kernels()
              .siluMul(
                  s.stream(),
                  out.ptr(),
                  inter,
                  in.ptr(),
                  in.ptr(4L * inter),
                  2 * inter,
                  rows,
                  inter);
          Compare.assertClose("silu_mul seed " + r.seed(), s.read(out, rows * inter), want, 1e-6);
        });
  }

  @ParameterizedTest
  @CsvSource({"1,7", "5,64", "33,1408"})
  void addBiasAddsToEveryRow(int rows, int cols) {
    Rand r = new Rand();
    float[] y = r.uniform(rows * cols, 2f);
    float[] bias = r.uniform(cols, 2f);
    float[] want = new float[rows * cols];
    for (int i = 0; i < want.length; i++) {
      want[i] = y[i] + bias[i % cols];
    }
    Gpu.run(
        s -> {
          DeviceBuffer yd = s.f32(y);
          Gpu.kernels().addBias(s.stream(), yd.ptr(), s.f32(bias).ptr(), rows, cols);
          Compare.assertClose("add_bias seed " + r.seed(), s.read(yd, rows * cols), want, 1e-7);
        });
  }

  @Test
  void toBf16RoundsToNearestEven() {
    Rand r = new Rand();
    float[] v = r.uniform(100_003, 1000f);
    v[0] = Float.NaN;
    v[1] = Float.POSITIVE_INFINITY;
    v[2] = -0f;
    Gpu.run(
        s -> {
          DeviceBuffer out = s.alloc(2L * v.length);
          Gpu.kernels().toBf16(s.stream(), out.ptr(), s.f32(v).ptr(), v.length);
          short[] got = out.downloadShorts(s.stream(), v.length);
          for (int i = 1; i < v.length; i++) {
            assertThat(got[i])
                .as("element %d of %s", i, v[i])
                .isEqualTo(Numerics.floatToBf16(v[i]));
          }
          assertThat(Float.isNaN(Numerics.bf16ToFloat(got[0]))).isTrue();
        });
  }

  @ParameterizedTest
  // 64, 2048, 7168: rows held in registers; 511 (not whole float4s) and 9000 (more float4s than
  // the threads hold): the strided path.
  @CsvSource({"1,64,false", "7,2048,true", "33,511,true", "4,7168,false", "2,9000,true"})
  void rmsNormWithAndWithoutResidual(int rows, int dim, boolean residual) {
    Rand r = new Rand();
    float[] x = r.uniform(rows * dim, 2f);
    float[] res = r.uniform(rows * dim, 2f);
    float[] w = r.uniform(dim, 1.5f);
    float eps = 1e-6f;
    float[] sum = x.clone();
    if (residual) {
      CpuOps.addInPlace(sum, res, rows * dim);
    }
    float[] want = sum.clone();
    CpuOps.rmsNorm(want, 0, rows, dim, dim, w, eps);
    Gpu.run(
        s -> {
          DeviceBuffer dx = s.f32(x);
          DeviceBuffer dr = s.f32(res);
          DeviceBuffer out = s.poisoned((long) rows * dim);
          Gpu.kernels()
              .rmsNorm(
                  s.stream(),
                  out.ptr(),
                  dim,
                  residual ? dr.ptr() : 0,
                  dim,
                  dx.ptr(),
                  dim,
                  s.f32(w).ptr(),
                  rows,
                  dim,
                  eps);
          Compare.assertClose("rmsnorm seed " + r.seed(), s.read(out, rows * dim), want, 1e-5);
          if (residual) {
            Compare.assertClose("residual sum", s.read(dr, rows * dim), sum, 1e-7);
          }
        });
  }

  @Test
  void rmsNormInPlaceOnALatentSliceOfWiderRows() {
    Rand r = new Rand();
    int rows = 9;
    int lora = 512;
    int width = 576;
    float[] kv = r.uniform(rows * width, 3f);
    float[] w = r.uniform(lora, 1f);
    float[] want = kv.clone();
    CpuOps.rmsNorm(want, 0, rows, lora, width, w, 1e-6);
    Gpu.run(
        s -> {
          DeviceBuffer d = s.f32(kv);
          Gpu.kernels()
              .rmsNorm(
                  s.stream(),
                  d.ptr(),
                  width,
                  0,
                  0,
                  d.ptr(),
                  width,
                  s.f32(w).ptr(),
                  rows,
                  lora,
                  1e-6f);
          Compare.assertClose("latent slice", s.read(d, rows * width), want, 1e-5);
        });
  }

  static RopeConfig rope(String type, boolean interleaved) {
    boolean yarn = type.equals("yarn");
    return new RopeConfig(
        10000,
        type,
        yarn ? 40 : 1,
        yarn ? 4096 : 0,
        32,
        1,
        yarn ? 1.0 : 0,
        yarn ? 1.0 : 0,
        Double.NaN,
        true,
        interleaved);
  }

  @ParameterizedTest
  @CsvSource({
    "default,true,64,3,1",
    "yarn,true,64,16,5",
    "default,false,128,4,7",
    "yarn,false,32,2,3"
  })
  void ropeMatchesTheRopeTable(String type, boolean interleaved, int dim, int heads, int tokens) {
    Rand r = new Rand();
    RopeTable table = new RopeTable(rope(type, interleaved), dim);
    int nope = 24; // rotary part sits after a non-rotary prefix, as in MLA's q heads
    int headStride = nope + dim;
    float[] x = r.uniform(tokens * heads * headStride, 2f);
    int[] pos = new int[tokens];
    for (int t = 0; t < tokens; t++) {
      pos[t] = r.nextInt(100_000);
    }
    float[] want = x.clone();
    float[] scratch = new float[dim];
    for (int t = 0; t < tokens; t++) {
      for (int h = 0; h < heads; h++) {
        table.rotate(want, (t * heads + h) * headStride + nope, pos[t], scratch);
      }
    }
    Gpu.run(
        s -> {
          DeviceBuffer d = s.f32(x);
          Gpu.kernels()
              .rope(
                  s.stream(),
                  d.ptr(),
                  heads * headStride,
                  headStride,
                  nope,
                  s.i32(pos).ptr(),
                  s.f32(table.inverseFrequencies()).ptr(),
                  tokens,
                  heads,
                  dim,
                  table.attentionScaling(),
                  table.interleaved());
          Compare.assertClose("rope seed " + r.seed(), s.read(d, x.length), want, 1e-5);
        });
  }
}
