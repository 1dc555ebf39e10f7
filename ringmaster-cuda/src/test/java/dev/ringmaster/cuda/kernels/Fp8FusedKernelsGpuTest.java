package dev.ringmaster.cuda.kernels;

import static dev.ringmaster.cuda.kernels.Fp8KernelsGpuTest.stack;
import static dev.ringmaster.cuda.kernels.Fp8KernelsGpuTest.upload;
import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.kernels.Fp8KernelsGpuTest.Fp8Stack;
import dev.ringmaster.cuda.testing.Compare;
import dev.ringmaster.cuda.testing.DeviceScope;
import dev.ringmaster.cuda.testing.Gpu;
import dev.ringmaster.cuda.testing.Rand;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The FP8 decode launches that fuse work ({@link Fp8Kernels#gemv2}, {@link Fp8Kernels#gemvSwiglu})
 * against the CPU's dequantizing reference with an f64 product (1e-5 relative, as the plain FP8
 * GEMV: exactly decoded codes, f32 accumulation), and the tensor-core FP8 experts against the bf16
 * tensor-core experts on the same values: with power-of-two block scales every dequantized weight
 * is a bf16 value, so both multiply the same bf16 operands and differ only in how f32 partial sums
 * are associated (the FP8 kernels scale each 128-k block's partial sum). That association moves an
 * occasional SwiGLU intermediate across a bf16 rounding boundary (one bf16 step, 2^-8 relative, in
 * that element), so the outputs agree to 1e-3 relative (measured 1.8e-5 on an H200); a layout or
 * scale-indexing mistake gives errors of order 1.
 */
@Tag("gpu")
class Fp8FusedKernelsGpuTest {
  @ParameterizedTest
  @CsvSource({
    // rows of W1 (one part), rows of W2 (one part), K, tokens
    "3072,576,2048,1", // V2-Lite q_proj and kv_a_proj_with_mqa
    "1536,576,2048,4",
    "1,3,48,1", // the first warp's pair of rows straddles the two matrices
    "130,37,200,6" // K % 16 != 0: the scalar path; two groups of tokens
  })
  void twoGemvsInOneLaunchMatchTheReference(int m1, int m2, int k, int n) {
    Rand r = new Rand();
    Fp8Stack w1 = stack(r, 1, m1, k);
    Fp8Stack w2 = stack(r, 1, m2, k);
    float[] x = r.uniform(n * k, 1f);
    float[] want1 = GemvGpuTest.reference(w1.values(), x, m1, k, n);
    float[] want2 = GemvGpuTest.reference(w2.values(), x, m2, k, n);
    Gpu.run(
        s -> {
          DeviceBuffer y1 = s.poisoned((long) n * m1);
          DeviceBuffer y2 = s.poisoned((long) n * m2);
          Gpu.kernels()
              .fp8()
              .gemv2(
                  s.stream(),
                  y1.ptr(),
                  upload(s, w1.codes()).ptr(),
                  s.f32(w1.scales()).ptr(),
                  m1,
                  m1,
                  y2.ptr(),
                  upload(s, w2.codes()).ptr(),
                  s.f32(w2.scales()).ptr(),
                  m2,
                  m2,
                  s.f32(x).ptr(),
                  k,
                  n);
          String what = "fp8 gemv2 " + m1 + "+" + m2 + "x" + k + ", seed " + r.seed();
          Compare.assertClose(what + " (first)", s.read(y1, n * m1), want1, 1e-5);
          Compare.assertClose(what + " (second)", s.read(y2, n * m2), want2, 1e-5);
        });
  }

  @ParameterizedTest
  @CsvSource({
    // inter, K, tokens
    "2816,2048,1", // V2-Lite shared experts
    "1408,2048,3",
    "144,144,5", // gate and up parts ending inside a 128-row block
    "40,200,2" // the scalar path
  })
  void swigluGemvMatchesTheReference(int inter, int k, int n) {
    Rand r = new Rand();
    Fp8Stack w = stack(r, 2, inter, k);
    float[] x = r.uniform(n * k, 1f);
    float[] gateUp = GemvGpuTest.reference(w.values(), x, 2 * inter, k, n);
    float[] want = new float[n * inter];
    for (int t = 0; t < n; t++) {
      for (int j = 0; j < inter; j++) {
        double g = gateUp[t * 2 * inter + j];
        double u = gateUp[t * 2 * inter + inter + j];
        want[t * inter + j] = (float) (g / (1 + Math.exp(-g)) * u);
      }
    }
    Gpu.run(
        s -> {
          DeviceBuffer out = s.poisoned((long) n * inter);
          Gpu.kernels()
              .fp8()
              .gemvSwiglu(
                  s.stream(),
                  out.ptr(),
                  upload(s, w.codes()).ptr(),
                  s.f32(w.scales()).ptr(),
                  s.f32(x).ptr(),
                  inter,
                  k,
                  n);
          Compare.assertClose(
              "fp8 swiglu gemv " + inter + "x" + k + ", seed " + r.seed(),
              s.read(out, n * inter),
              want,
              1e-5);
        });
  }

  @ParameterizedTest
  @CsvSource({
    // tokens, experts, topK, hidden, inter
    "1,4,2,2048,1408",
    "32,8,6,2048,1408", // V2-Lite expert shape, decode batch 32
    "40,4,2,256,144", // passes of 32 and a remainder; inter ends inside a 64-row tile
    "9,4,2,200,40" // partial scale blocks in both projections
  })
  void tensorCoreExpertsEqualTheBf16OnesOnTheSameValues(
      int n, int e, int k, int hidden, int inter) {
    Rand r = new Rand();
    Fp8Stack w13 = stack(r, 2 * e, inter, hidden, true);
    Fp8Stack w2 = stack(r, e, hidden, inter, true);
    float[] x = r.uniform(n * hidden, 1f);
    int[] experts = new int[n * k];
    float[] weights = new float[n * k];
    MoeGpuTest.route(r, n, e, k, Math.min(n, 40), experts, weights);
    Gpu.run(
        s -> {
          long xd = s.f32(x).ptr();
          long ed = s.i32(experts).ptr();
          long wd = s.f32(weights).ptr();
          try (MoeWorkspace ws = new MoeWorkspace(n, e, k, hidden, inter)) {
            MoeKernels moe = Gpu.kernels().moe();
            ws.y.poison(s.stream());
            moe.moeExpertPairsFp8(
                s.stream(),
                ws,
                xd,
                upload(s, w13.codes()).ptr(),
                s.f32(w13.scales()).ptr(),
                upload(s, w2.codes()).ptr(),
                s.f32(w2.scales()).ptr(),
                ed,
                wd,
                n,
                hidden,
                inter,
                true,
                false);
            float[] fp8 = s.read(ws.y, n * k * hidden);
            ws.y.poison(s.stream());
            moe.moeExpertPairs(
                s.stream(),
                ws,
                xd,
                bf16(s, w13.values()).ptr(),
                bf16(s, w2.values()).ptr(),
                ed,
                wd,
                n,
                hidden,
                inter,
                true);
            float[] bf16 = s.read(ws.y, n * k * hidden);
            Compare.assertClose(
                "fp8 against bf16 tensor-core experts, " + n + " tokens, seed " + r.seed(),
                fp8,
                bf16,
                1e-3);
          }
        });
  }

  /**
   * A pair's row from the FP8 tensor-core experts does not depend on the batch: the same routing
   * twice gives the same bits, and one token alone gives the bits it gets among 48 (two passes of
   * its hot expert).
   */
  @Test
  void tensorCoreExpertsDoNotDependOnTheBatch() {
    Rand r = new Rand();
    int n = 48;
    int e = 8;
    int k = 2;
    int hidden = 256;
    int inter = 144;
    Fp8Stack w13 = stack(r, 2 * e, inter, hidden);
    Fp8Stack w2 = stack(r, e, hidden, inter);
    float[] x = r.uniform(n * hidden, 1f);
    int[] experts = new int[n * k];
    float[] weights = new float[n * k];
    MoeGpuTest.route(r, n, e, k, 40, experts, weights);
    int last = n - 1;
    float[] lastX = java.util.Arrays.copyOfRange(x, last * hidden, n * hidden);
    int[] lastExperts = java.util.Arrays.copyOfRange(experts, last * k, n * k);
    float[] lastWeights = java.util.Arrays.copyOfRange(weights, last * k, n * k);
    Gpu.run(
        s -> {
          long w13c = upload(s, w13.codes()).ptr();
          long w13s = s.f32(w13.scales()).ptr();
          long w2c = upload(s, w2.codes()).ptr();
          long w2s = s.f32(w2.scales()).ptr();
          float[] all =
              pairRows(s, w13c, w13s, w2c, w2s, x, experts, weights, n, e, k, hidden, inter);
          float[] again =
              pairRows(s, w13c, w13s, w2c, w2s, x, experts, weights, n, e, k, hidden, inter);
          assertThat(Compare.bits(again))
              .as("same batch twice, seed %d", r.seed())
              .isEqualTo(Compare.bits(all));
          float[] alone =
              pairRows(
                  s, w13c, w13s, w2c, w2s, lastX, lastExperts, lastWeights, 1, e, k, hidden, inter);
          assertThat(Compare.bits(alone))
              .as("last token alone, seed %d", r.seed())
              .isEqualTo(
                  Compare.bits(java.util.Arrays.copyOfRange(all, last * k * hidden, all.length)));
        });
  }

  private static float[] pairRows(
      DeviceScope s,
      long w13c,
      long w13s,
      long w2c,
      long w2s,
      float[] x,
      int[] experts,
      float[] weights,
      int n,
      int e,
      int k,
      int hidden,
      int inter) {
    try (MoeWorkspace ws = new MoeWorkspace(n, e, k, hidden, inter)) {
      ws.y.poison(s.stream());
      Gpu.kernels()
          .moe()
          .moeExpertPairsFp8(
              s.stream(),
              ws,
              s.f32(x).ptr(),
              w13c,
              w13s,
              w2c,
              w2s,
              s.i32(experts).ptr(),
              s.f32(weights).ptr(),
              n,
              hidden,
              inter,
              true,
              false);
      return s.read(ws.y, n * k * hidden);
    }
  }

  /** Exactly representable values (power-of-two scales) as bf16 on the device. */
  private static DeviceBuffer bf16(DeviceScope s, float[] values) {
    Rand.Bf16 b = Rand.Bf16.of(values);
    for (int i = 0; i < values.length; i++) {
      if (b.values()[i] != values[i]) {
        throw new AssertionError("value " + i + " is not a bf16 value: " + values[i]);
      }
    }
    return s.bf16(b.bits());
  }
}
