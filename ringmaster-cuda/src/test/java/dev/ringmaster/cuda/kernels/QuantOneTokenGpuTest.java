package dev.ringmaster.cuda.kernels;

import static dev.ringmaster.cuda.kernels.Fp8KernelsGpuTest.upload;
import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.kernels.Fp8KernelsGpuTest.Fp8Stack;
import dev.ringmaster.cuda.kernels.Nvfp4KernelsGpuTest.Nvfp4Stack;
import dev.ringmaster.cuda.testing.Compare;
import dev.ringmaster.cuda.testing.DeviceScope;
import dev.ringmaster.cuda.testing.Gpu;
import dev.ringmaster.cuda.testing.Rand;
import java.util.function.Supplier;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The one-token FP8 and NVFP4 kernels ({@code quant_one_token.cu}, {@link
 * RingmasterKernels#useQuantOneToken}) against the general kernels at one token, bit for bit (the
 * same per-lane sums in the same order, so any difference is an indexing or decoding mistake), and
 * against the CPU's dequantizing reference (1e-5 relative for the GEMVs, 1e-4 for the experts, as
 * {@link Fp8KernelsGpuTest}). Shapes: V2-Lite's, row counts that are not multiples of a warp's rows
 * (the last warp re-reads its last row), parts ending inside a 128-row scale block, K not a
 * multiple of 16 (FP8's scalar path) or of 32 (NVFP4's 8-byte groups), K below one chunk a lane.
 */
@Tag("gpu")
class QuantOneTokenGpuTest {
  /**
   * {@code launches} with the general kernels, then with the one-token ones; the choice restored.
   */
  private static float[][] generalThenOneToken(Supplier<float[]> launches) {
    RingmasterKernels kk = Gpu.kernels();
    boolean before = kk.quantOneToken();
    try {
      kk.useQuantOneToken(false);
      float[] general = launches.get();
      kk.useQuantOneToken(true);
      float[] one = launches.get();
      return new float[][] {general, one};
    } finally {
      kk.useQuantOneToken(before);
    }
  }

  private static void assertSameBits(String what, float[][] generalAndOne) {
    int[] general = new int[generalAndOne[0].length];
    int[] one = new int[general.length];
    for (int i = 0; i < general.length; i++) {
      general[i] = Float.floatToRawIntBits(generalAndOne[0][i]);
      one[i] = Float.floatToRawIntBits(generalAndOne[1][i]);
    }
    assertThat(one).as(what + ": one-token kernel against the general one").isEqualTo(general);
  }

  private static float[] swigluReference(float[] gateUp, int inter) {
    float[] want = new float[inter];
    for (int j = 0; j < inter; j++) {
      double g = gateUp[j];
      double u = gateUp[inter + j];
      want[j] = (float) (g / (1 + Math.exp(-g)) * u);
    }
    return want;
  }

  @ParameterizedTest
  @CsvSource({
    // rows of W1, rows of W2 (0: one GEMV), rows per scale part of W1, K
    "3072,576,3072,2048", // V2-Lite q_proj and kv_a_proj_with_mqa
    "2048,0,2048,2048", // o_proj
    "2048,0,2048,2816", // a shared experts' down projection: 5.5 chunks a lane
    "288,0,144,144", // two parts of 144 rows: each ends inside a 128-row block
    "37,5,37,72", // K % 16 != 0: the scalar path; odd row counts
    "3,2,3,48", // a warp's rows straddle the two matrices
    "1,0,1,16"
  })
  void fp8GemvMatchesTheGeneralKernel(int m1, int m2, int partRows, int k) {
    Rand r = new Rand();
    Fp8Stack w1 = Fp8KernelsGpuTest.stack(r, m1 / partRows, partRows, k);
    Fp8Stack w2 = m2 == 0 ? null : Fp8KernelsGpuTest.stack(r, 1, m2, k);
    float[] x = r.uniform(k, 1f);
    float[] want1 = GemvGpuTest.reference(w1.values(), x, m1, k, 1);
    String what = "fp8 gemv " + m1 + "+" + m2 + "x" + k + ", seed " + r.seed();
    Gpu.run(
        s -> {
          long c1 = upload(s, w1.codes()).ptr();
          long s1 = s.f32(w1.scales()).ptr();
          long c2 = w2 == null ? 0 : upload(s, w2.codes()).ptr();
          long s2 = w2 == null ? 0 : s.f32(w2.scales()).ptr();
          long xp = s.f32(x).ptr();
          float[][] got =
              generalThenOneToken(
                  () -> {
                    DeviceBuffer y1 = s.poisoned(m1);
                    DeviceBuffer y2 = s.poisoned(Math.max(m2, 1));
                    Gpu.kernels()
                        .fp8()
                        .gemv2(
                            s.stream(),
                            y1.ptr(),
                            c1,
                            s1,
                            partRows,
                            m1,
                            y2.ptr(),
                            c2,
                            s2,
                            Math.max(m2, 1),
                            m2,
                            xp,
                            k,
                            1);
                    float[] a = s.read(y1, m1);
                    float[] b = s.read(y2, m2);
                    float[] both = new float[m1 + m2];
                    System.arraycopy(a, 0, both, 0, m1);
                    System.arraycopy(b, 0, both, m1, m2);
                    return both;
                  });
          assertSameBits(what, got);
          float[] first = new float[m1];
          System.arraycopy(got[1], 0, first, 0, m1);
          Compare.assertClose(what, first, want1, 1e-5);
          if (w2 != null) {
            float[] second = new float[m2];
            System.arraycopy(got[1], m1, second, 0, m2);
            Compare.assertClose(
                what + " (second)", second, GemvGpuTest.reference(w2.values(), x, m2, k, 1), 1e-5);
          }
        });
  }

  @ParameterizedTest
  @CsvSource({
    // inter, K
    "2816,2048", // V2-Lite shared experts
    "10944,2048", // its dense layer's MLP
    "144,144", // gate and up parts ending inside a 128-row block
    "41,200", // the scalar path; an odd column count
    "1,32"
  })
  void fp8SwigluGemvMatchesTheGeneralKernel(int inter, int k) {
    Rand r = new Rand();
    Fp8Stack w = Fp8KernelsGpuTest.stack(r, 2, inter, k);
    float[] x = r.uniform(k, 1f);
    float[] want = swigluReference(GemvGpuTest.reference(w.values(), x, 2 * inter, k, 1), inter);
    String what = "fp8 swiglu gemv " + inter + "x" + k + ", seed " + r.seed();
    Gpu.run(
        s -> {
          long codes = upload(s, w.codes()).ptr();
          long scales = s.f32(w.scales()).ptr();
          long xp = s.f32(x).ptr();
          float[][] got =
              generalThenOneToken(
                  () -> {
                    DeviceBuffer out = s.poisoned(inter);
                    Gpu.kernels()
                        .fp8()
                        .gemvSwiglu(s.stream(), out.ptr(), codes, scales, xp, inter, k, 1);
                    return s.read(out, inter);
                  });
          assertSameBits(what, got);
          Compare.assertClose(what, got[1], want, 1e-5);
        });
  }

  @ParameterizedTest
  @CsvSource({
    // experts, topK, hidden, inter
    "8,6,2048,1408", // V2-Lite expert shape
    "4,2,256,144", // inter ends inside a 128-row block: gate and up parts of 144 rows
    "4,2,200,40", // K % 16 != 0 in both projections: the scalar path
    "3,2,176,208", // 11 and 13 chunks a row: less than one chunk a lane
    "4,4,2048,10" // inter 10: the down projection's scalar path (K % 16 != 0)
  })
  void fp8ExpertsMatchTheGeneralKernels(int e, int k, int hidden, int inter) {
    Rand r = new Rand();
    Fp8Stack w13 = Fp8KernelsGpuTest.stack(r, 2 * e, inter, hidden);
    Fp8Stack w2 = Fp8KernelsGpuTest.stack(r, e, hidden, inter);
    float[] x = r.uniform(hidden, 1f);
    int[] experts = route(k, e);
    float[] weights = r.uniform(k, 1f);
    float[] want =
        MoeGpuTest.reference(x, w13.values(), w2.values(), experts, weights, 1, k, hidden, inter);
    String what = "fp8 experts " + e + "x" + k + ", " + hidden + "/" + inter + ", seed " + r.seed();
    Gpu.run(
        s -> {
          long xp = s.f32(x).ptr();
          long c13 = upload(s, w13.codes()).ptr();
          long s13 = s.f32(w13.scales()).ptr();
          long c2 = upload(s, w2.codes()).ptr();
          long s2 = s.f32(w2.scales()).ptr();
          long ep = s.i32(experts).ptr();
          long wp = s.f32(weights).ptr();
          try (MoeWorkspace ws = new MoeWorkspace(1, e, k, hidden, inter)) {
            MoeKernels moe = Gpu.kernels().moe();
            float[][] rows =
                generalThenOneToken(
                    () -> {
                      ws.y.poison(s.stream());
                      moe.moeExpertPairsFp8(
                          s.stream(),
                          ws,
                          xp,
                          c13,
                          s13,
                          c2,
                          s2,
                          ep,
                          wp,
                          1,
                          hidden,
                          inter,
                          false,
                          false);
                      return s.read(ws.y, k * hidden);
                    });
            assertSameBits(what, rows);
            assertExpertsClose(s, moe, ws, what, hidden, k, want);
          }
        });
  }

  @ParameterizedTest
  @CsvSource({
    // rows of W1, rows of W2 (0: one GEMV), rows per part of W1, K
    "3072,576,3072,2048", // V2-Lite q_proj and kv_a
    "2048,0,2048,2048",
    "2048,0,2048,1408", // a routed expert's down projection shape: 44 chunks a row
    "288,0,144,144", // K % 32 == 16: 8-byte groups
    "37,5,37,80",
    "3,2,3,48",
    "1,0,1,32"
  })
  void nvfp4GemvMatchesTheGeneralKernel(int m1, int m2, int partRows, int k) {
    Rand r = new Rand();
    Nvfp4Stack w1 = Nvfp4KernelsGpuTest.stack(r, m1 / partRows, partRows, k);
    Nvfp4Stack w2 = m2 == 0 ? null : Nvfp4KernelsGpuTest.stack(r, 1, m2, k);
    float[] x = r.uniform(k, 1f);
    float[] want1 = GemvGpuTest.reference(w1.values(), x, m1, k, 1);
    String what = "nvfp4 gemv " + m1 + "+" + m2 + "x" + k + ", seed " + r.seed();
    Gpu.run(
        s -> {
          long c1 = s.i32(w1.deviceWords()).ptr();
          long s1 = Nvfp4KernelsGpuTest.bytes(s, w1.scales()).ptr();
          long g1 = s.f32(w1.globals()).ptr();
          long c2 = w2 == null ? 0 : s.i32(w2.deviceWords()).ptr();
          long s2 = w2 == null ? 0 : Nvfp4KernelsGpuTest.bytes(s, w2.scales()).ptr();
          long g2 = w2 == null ? 0 : s.f32(w2.globals()).ptr();
          long xp = s.f32(x).ptr();
          float[][] got =
              generalThenOneToken(
                  () -> {
                    DeviceBuffer y1 = s.poisoned(m1);
                    DeviceBuffer y2 = s.poisoned(Math.max(m2, 1));
                    Gpu.kernels()
                        .nvfp4()
                        .gemv2(
                            s.stream(),
                            y1.ptr(),
                            c1,
                            s1,
                            g1,
                            partRows,
                            m1,
                            y2.ptr(),
                            c2,
                            s2,
                            g2,
                            Math.max(m2, 1),
                            m2,
                            xp,
                            k,
                            1);
                    float[] a = s.read(y1, m1);
                    float[] b = s.read(y2, m2);
                    float[] both = new float[m1 + m2];
                    System.arraycopy(a, 0, both, 0, m1);
                    System.arraycopy(b, 0, both, m1, m2);
                    return both;
                  });
          assertSameBits(what, got);
          float[] first = new float[m1];
          System.arraycopy(got[1], 0, first, 0, m1);
          Compare.assertClose(what, first, want1, 1e-5);
          if (w2 != null) {
            float[] second = new float[m2];
            System.arraycopy(got[1], m1, second, 0, m2);
            Compare.assertClose(
                what + " (second)", second, GemvGpuTest.reference(w2.values(), x, m2, k, 1), 1e-5);
          }
        });
  }

  @ParameterizedTest
  @CsvSource({"2816,2048", "144,144", "41,80", "1,32"})
  void nvfp4SwigluGemvMatchesTheGeneralKernel(int inter, int k) {
    Rand r = new Rand();
    Nvfp4Stack w = Nvfp4KernelsGpuTest.stack(r, 2, inter, k);
    float[] x = r.uniform(k, 1f);
    float[] want = swigluReference(GemvGpuTest.reference(w.values(), x, 2 * inter, k, 1), inter);
    String what = "nvfp4 swiglu gemv " + inter + "x" + k + ", seed " + r.seed();
    Gpu.run(
        s -> {
          long codes = s.i32(w.deviceWords()).ptr();
          long scales = Nvfp4KernelsGpuTest.bytes(s, w.scales()).ptr();
          long globals = s.f32(w.globals()).ptr();
          long xp = s.f32(x).ptr();
          float[][] got =
              generalThenOneToken(
                  () -> {
                    DeviceBuffer out = s.poisoned(inter);
                    Gpu.kernels()
                        .nvfp4()
                        .gemvSwiglu(s.stream(), out.ptr(), codes, scales, globals, xp, inter, k, 1);
                    return s.read(out, inter);
                  });
          assertSameBits(what, got);
          Compare.assertClose(what, got[1], want, 1e-5);
        });
  }

  @ParameterizedTest
  @CsvSource({
    // experts, topK, hidden, inter
    "8,6,2048,1408", // V2-Lite expert shape
    "4,2,256,144", // K % 32 == 16 in both projections: 8-byte groups
    "3,2,96,208",
    "4,4,2048,16" // 2048 down rows of one group each
  })
  void nvfp4ExpertsMatchTheGeneralKernels(int e, int k, int hidden, int inter) {
    Rand r = new Rand();
    Nvfp4Stack w13 = Nvfp4KernelsGpuTest.stack(r, 2 * e, inter, hidden);
    Nvfp4Stack w2 = Nvfp4KernelsGpuTest.stack(r, e, hidden, inter);
    float[] x = r.uniform(hidden, 1f);
    int[] experts = route(k, e);
    float[] weights = r.uniform(k, 1f);
    float[] want =
        MoeGpuTest.reference(x, w13.values(), w2.values(), experts, weights, 1, k, hidden, inter);
    String what =
        "nvfp4 experts " + e + "x" + k + ", " + hidden + "/" + inter + ", seed " + r.seed();
    Gpu.run(
        s -> {
          long xp = s.f32(x).ptr();
          long c13 = s.i32(w13.deviceWords()).ptr();
          long s13 = Nvfp4KernelsGpuTest.bytes(s, w13.scales()).ptr();
          long g13 = s.f32(w13.globals()).ptr();
          long c2 = s.i32(w2.deviceWords()).ptr();
          long s2 = Nvfp4KernelsGpuTest.bytes(s, w2.scales()).ptr();
          long g2 = s.f32(w2.globals()).ptr();
          long ep = s.i32(experts).ptr();
          long wp = s.f32(weights).ptr();
          try (MoeWorkspace ws = new MoeWorkspace(1, e, k, hidden, inter)) {
            MoeKernels moe = Gpu.kernels().moe();
            float[][] rows =
                generalThenOneToken(
                    () -> {
                      ws.y.poison(s.stream());
                      Gpu.kernels()
                          .nvfp4()
                          .moeExpertPairs(
                              s.stream(),
                              moe,
                              ws,
                              xp,
                              c13,
                              s13,
                              g13,
                              c2,
                              s2,
                              g2,
                              ep,
                              wp,
                              1,
                              hidden,
                              inter,
                              false,
                              false);
                      return s.read(ws.y, k * hidden);
                    });
            assertSameBits(what, rows);
            assertExpertsClose(s, moe, ws, what, hidden, k, want);
          }
        });
  }

  /** The last run's pair rows summed by the combine, against the reference (1e-4). */
  private static void assertExpertsClose(
      DeviceScope s,
      MoeKernels moe,
      MoeWorkspace ws,
      String what,
      int hidden,
      int k,
      float[] want) {
    DeviceBuffer out = s.poisoned(hidden);
    moe.moeCombine(s.stream(), out.ptr(), ws.pairRowsPtr(), 1, hidden, k, false);
    Compare.assertClose(what, s.read(out, hidden), want, 1e-4);
  }

  /** One token's k distinct experts of e, not in id order (the alignment sorts them). */
  private static int[] route(int k, int e) {
    int[] experts = new int[k];
    for (int j = 0; j < k; j++) {
      experts[j] = (e - 1 - 2 * j + 2 * e) % e;
    }
    boolean[] used = new boolean[e];
    for (int j = 0; j < k; j++) {
      while (used[experts[j]]) {
        experts[j] = (experts[j] + 1) % e;
      }
      used[experts[j]] = true;
    }
    return experts;
  }
}
