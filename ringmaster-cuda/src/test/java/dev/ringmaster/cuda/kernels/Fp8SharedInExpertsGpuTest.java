package dev.ringmaster.cuda.kernels;

import static dev.ringmaster.cuda.kernels.Fp8KernelsGpuTest.upload;
import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.kernels.Fp8KernelsGpuTest.Fp8Stack;
import dev.ringmaster.cuda.testing.Compare;
import dev.ringmaster.cuda.testing.Gpu;
import dev.ringmaster.cuda.testing.Rand;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The one-token FP8 kernels' two bit-identical variants ({@code quant_one_token.cu}): the shared
 * experts as extra blocks of the routed experts' launches ({@link MoeKernels.Fp8SharedExperts},
 * kernel option {@code moe-shared-fused}) against the separate SwiGLU GEMV and GEMV, and the
 * weights-first kernels ({@link RingmasterKernels#useQuantWeightsFirst}, {@code
 * quant-weights-first}) against the plain ones, and the decode batches' tensor-core SwiGLU linear
 * ({@link Fp8Kernels#linearMmaSwiglu}, {@code fp8-mma-swiglu}) against the linear then
 * SiLU-and-mul; bit for bit, every pair row, the shared intermediate and output, and against the
 * CPU's dequantizing reference (1e-5 GEMVs, 1e-4 the shared output). Shapes: V2-Lite's, parts
 * ending inside a 128-row scale block, K not a multiple of 16 (the scalar path, which waits first),
 * K of two groups of chunks a lane (2816: issued first where a warp has at most 2 rows, else
 * waiting first), K of three groups (waiting first, as the dense down projection's 10944).
 */
@Tag("gpu")
class Fp8SharedInExpertsGpuTest {
  private static void assertSameBits(String what, float[] want, float[] got) {
    int[] a = new int[want.length];
    int[] b = new int[got.length];
    for (int i = 0; i < a.length; i++) {
      a[i] = Float.floatToRawIntBits(want[i]);
      b[i] = Float.floatToRawIntBits(got[i]);
    }
    assertThat(b).as(what).isEqualTo(a);
  }

  @ParameterizedTest
  @CsvSource({
    // experts, topK, hidden, routed inter, shared inter
    "8,6,2048,1408,2816", // V2-Lite's shapes (2 shared experts of 1408)
    "4,2,256,144,288", // parts ending inside a 128-row block; 2 shared grid rows
    "4,2,200,40,80", // K % 16 != 0 in every projection: the scalar path
    "3,2,176,208,16", // a shared part of 16 rows: fewer shared blocks than one grid row
    "4,4,2048,10,20" // the down projections' scalar path
  })
  void sharedExpertsInsideTheExpertLaunchesMatchTheSeparateKernels(
      int e, int k, int hidden, int inter, int sharedInter) {
    Rand r = new Rand();
    Fp8Stack w13 = Fp8KernelsGpuTest.stack(r, 2 * e, inter, hidden);
    Fp8Stack w2 = Fp8KernelsGpuTest.stack(r, e, hidden, inter);
    Fp8Stack gu = Fp8KernelsGpuTest.stack(r, 2, sharedInter, hidden);
    Fp8Stack down = Fp8KernelsGpuTest.stack(r, 1, hidden, sharedInter);
    float[] x = r.uniform(hidden, 1f);
    int[] experts = new int[k];
    for (int j = 0; j < k; j++) {
      experts[j] = (e - 1 - j + e) % e; // distinct, descending
    }
    float[] weights = r.uniform(k, 1f);
    float[] gateUp = GemvGpuTest.reference(gu.values(), x, 2 * sharedInter, hidden, 1);
    float[] actWant = new float[sharedInter];
    for (int j = 0; j < sharedInter; j++) {
      double g = gateUp[j];
      actWant[j] = (float) (g / (1 + Math.exp(-g)) * gateUp[sharedInter + j]);
    }
    float[] outWant = GemvGpuTest.reference(down.values(), actWant, hidden, sharedInter, 1);
    String what =
        "fp8 shared experts "
            + e
            + "x"
            + k
            + ", "
            + hidden
            + "/"
            + inter
            + "/"
            + sharedInter
            + ", seed "
            + r.seed();
    RingmasterKernels kk = Gpu.kernels();
    boolean oneBefore = kk.quantOneToken();
    boolean firstBefore = kk.quantWeightsFirst();
    Gpu.run(
        s -> {
          long xp = s.f32(x).ptr();
          long c13 = upload(s, w13.codes()).ptr();
          long s13 = s.f32(w13.scales()).ptr();
          long c2 = upload(s, w2.codes()).ptr();
          long s2 = s.f32(w2.scales()).ptr();
          long cgu = upload(s, gu.codes()).ptr();
          long sgu = s.f32(gu.scales()).ptr();
          long cd = upload(s, down.codes()).ptr();
          long sd = s.f32(down.scales()).ptr();
          long ep = s.i32(experts).ptr();
          long wp = s.f32(weights).ptr();
          DeviceBuffer act = s.poisoned(sharedInter);
          DeviceBuffer out = s.poisoned(hidden);
          try (MoeWorkspace ws = new MoeWorkspace(1, e, k, hidden, inter)) {
            MoeKernels moe = kk.moe();
            kk.useQuantOneToken(true);
            float[] actRef = null;
            float[] outRef = null;
            float[] rowsRef = null;
            for (boolean first : new boolean[] {false, true}) {
              kk.useQuantWeightsFirst(first);
              // The separate launches: the side stream's kernels, then the routed experts.
              act.poison(s.stream());
              out.poison(s.stream());
              ws.y.poison(s.stream());
              kk.fp8().gemvSwiglu(s.stream(), act.ptr(), cgu, sgu, xp, sharedInter, hidden, 1);
              kk.fp8()
                  .gemv(s.stream(), out.ptr(), cd, sd, hidden, act.ptr(), hidden, sharedInter, 1);
              moe.moeExpertPairsFp8(
                  s.stream(), ws, xp, c13, s13, c2, s2, ep, wp, 1, hidden, inter, false, false);
              float[] actSep = s.read(act, sharedInter);
              float[] outSep = s.read(out, hidden);
              float[] rowsSep = s.read(ws.y, k * hidden);
              // The same work in the two expert launches.
              act.poison(s.stream());
              out.poison(s.stream());
              ws.y.poison(s.stream());
              assertThat(moe.takesFp8SharedExperts(1, false)).isTrue();
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
                  false,
                  MoeKernels.MOE_MMA_PASS_TOKENS,
                  new MoeKernels.Fp8SharedExperts(
                      cgu, sgu, sharedInter, act.ptr(), cd, sd, hidden, out.ptr()));
              String w = what + (first ? ", weights first" : "");
              assertSameBits(w + ": shared intermediate", actSep, s.read(act, sharedInter));
              assertSameBits(w + ": shared output", outSep, s.read(out, hidden));
              assertSameBits(w + ": routed pair rows", rowsSep, s.read(ws.y, k * hidden));
              if (actRef == null) {
                actRef = actSep;
                outRef = outSep;
                rowsRef = rowsSep;
              } else {
                assertSameBits(w + ": against waiting first (intermediate)", actRef, actSep);
                assertSameBits(w + ": against waiting first (output)", outRef, outSep);
                assertSameBits(w + ": against waiting first (pair rows)", rowsRef, rowsSep);
              }
            }
            Compare.assertClose(what + ": shared intermediate", actRef, actWant, 1e-5);
            Compare.assertClose(what + ": shared output", outRef, outWant, 1e-4);
          } finally {
            kk.useQuantOneToken(oneBefore);
            kk.useQuantWeightsFirst(firstBefore);
          }
        });
  }

  @ParameterizedTest
  @CsvSource({
    // rows of W1, rows of W2 (0: one GEMV), rows per scale part of W1, K
    "3072,576,3072,2048", // V2-Lite q_proj and kv_a: one group of chunks a lane
    "2048,0,2048,2816", // a shared down projection: two groups a lane, both issued first
    "64,0,64,4224", // three groups: waits first
    "288,0,144,144",
    "37,5,37,72", // the scalar path
    "1,0,1,16"
  })
  void weightsFirstGemvsMatchThePlainOnes(int m1, int m2, int partRows, int k) {
    Rand r = new Rand();
    Fp8Stack w1 = Fp8KernelsGpuTest.stack(r, m1 / partRows, partRows, k);
    Fp8Stack w2 = m2 == 0 ? null : Fp8KernelsGpuTest.stack(r, 1, m2, k);
    Fp8Stack gu = Fp8KernelsGpuTest.stack(r, 2, m1, k);
    float[] x = r.uniform(k, 1f);
    String what = "fp8 weights-first gemv " + m1 + "+" + m2 + "x" + k + ", seed " + r.seed();
    RingmasterKernels kk = Gpu.kernels();
    boolean oneBefore = kk.quantOneToken();
    boolean firstBefore = kk.quantWeightsFirst();
    Gpu.run(
        s -> {
          long c1 = upload(s, w1.codes()).ptr();
          long s1 = s.f32(w1.scales()).ptr();
          long c2 = w2 == null ? 0 : upload(s, w2.codes()).ptr();
          long s2 = w2 == null ? 0 : s.f32(w2.scales()).ptr();
          long cgu = upload(s, gu.codes()).ptr();
          long sgu = s.f32(gu.scales()).ptr();
          long xp = s.f32(x).ptr();
          float[][] y = new float[2][];
          float[][] sw = new float[2][];
          try {
            kk.useQuantOneToken(true);
            for (int f = 0; f < 2; f++) {
              kk.useQuantWeightsFirst(f == 1);
              DeviceBuffer y1 = s.poisoned(m1 + Math.max(m2, 1));
              kk.fp8()
                  .gemv2(
                      s.stream(),
                      y1.ptr(),
                      c1,
                      s1,
                      partRows,
                      m1,
                      y1.ptr() + 4L * m1,
                      c2,
                      s2,
                      Math.max(m2, 1),
                      m2,
                      xp,
                      k,
                      1);
              y[f] = s.read(y1, m1 + m2);
              DeviceBuffer o = s.poisoned(m1);
              kk.fp8().gemvSwiglu(s.stream(), o.ptr(), cgu, sgu, xp, m1, k, 1);
              sw[f] = s.read(o, m1);
            }
          } finally {
            kk.useQuantOneToken(oneBefore);
            kk.useQuantWeightsFirst(firstBefore);
          }
          assertSameBits(what, y[0], y[1]);
          assertSameBits(what + " (SwiGLU)", sw[0], sw[1]);
          float[] first = new float[m1];
          System.arraycopy(y[1], 0, first, 0, m1);
          Compare.assertClose(what, first, GemvGpuTest.reference(w1.values(), x, m1, k, 1), 1e-5);
        });
  }

  @ParameterizedTest
  @CsvSource({
    // inter, K, tokens
    "2816,2048,8", // V2-Lite shared experts: 3 K slices
    "2816,2048,32",
    "2816,2048,64", // two passes of 32 tokens
    "144,1024,5", // parts ending inside a 128-row block, 8 K slices
    "144,1024,33"
  })
  void mmaSwigluMatchesTheLinearThenSiluMul(int inter, int k, int n) {
    assertThat(Fp8Kernels.linearMmaSplits(2 * inter, k)).as("a split matrix").isGreaterThan(1);
    Rand r = new Rand();
    Fp8Stack gu = Fp8KernelsGpuTest.stack(r, 2, inter, k);
    float[] x = r.uniform(n * k, 1f);
    String what = "fp8 mma swiglu " + inter + "x" + k + " at " + n + ", seed " + r.seed();
    RingmasterKernels kk = Gpu.kernels();
    Gpu.run(
        s -> {
          long codes = upload(s, gu.codes()).ptr();
          long scales = s.f32(gu.scales()).ptr();
          long xp = s.f32(x).ptr();
          long floats = Fp8Kernels.linearMmaMaxScratchFloats(n);
          DeviceBuffer partials = s.alloc(4 * floats);
          DeviceBuffer gateUp = s.poisoned((long) n * 2 * inter);
          DeviceBuffer sep = s.poisoned((long) n * inter);
          DeviceBuffer fused = s.poisoned((long) n * inter);
          kk.fp8()
              .linearMma(
                  s.stream(),
                  gateUp.ptr(),
                  codes,
                  scales,
                  inter,
                  xp,
                  2 * inter,
                  k,
                  n,
                  partials.ptr(),
                  floats);
          kk.siluMul(
              s.stream(),
              sep.ptr(),
              inter,
              gateUp.ptr(),
              gateUp.ptr() + 4L * inter,
              2 * inter,
              n,
              inter);
          kk.fp8()
              .linearMmaSwiglu(
                  s.stream(),
                  fused.ptr(),
                  codes,
                  scales,
                  inter,
                  xp,
                  inter,
                  k,
                  n,
                  partials.ptr(),
                  floats);
          float[] want = s.read(sep, n * inter);
          assertSameBits(what, want, s.read(fused, n * inter));
          // Against the reference on bf16-rounded activations, as Fp8LinearMmaGpuTest.
          float[] xr = Fp8LinearMmaGpuTest.bf16Rounded(x);
          float[] ref = GemvGpuTest.reference(gu.values(), xr, 2 * inter, k, n);
          float[] act = new float[n * inter];
          for (int t = 0; t < n; t++) {
            for (int j = 0; j < inter; j++) {
              double g = ref[t * 2 * inter + j];
              act[t * inter + j] =
                  (float) (g / (1 + Math.exp(-g)) * ref[t * 2 * inter + inter + j]);
            }
          }
          Compare.assertClose(what, want, act, 1e-3);
        });
  }
}
