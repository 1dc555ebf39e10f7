package dev.ringmaster.cuda.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.testing.Compare;
import dev.ringmaster.cuda.testing.DeviceScope;
import dev.ringmaster.cuda.testing.Gpu;
import dev.ringmaster.cuda.testing.Rand;
import dev.ringmaster.model.config.MoeConfig;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The bf16 GEMVs with tokens in groups of 8 ({@link RingmasterKernels#useGemvTokenGroup}: the
 * {@code _t8} kernels past 4 tokens) against groups of 4, bit for bit: {@link
 * RingmasterKernels#gemv}, {@link RingmasterKernels#gemv2}, {@link RingmasterKernels#gemvSwiglu}
 * and the router GEMV of {@link SmallBatchMoe#routerRoute}; the GEMV also within 1e-5 of the f64
 * reference (GemvGpuTest's bound). Token counts 5-8 (one group of 8, two of 4), 9, 12, 13 and 17
 * (groups of 8 and a remainder of 1 or up to 4), and 3 (the same kernel either way); V2-Lite's
 * shapes (o_proj, q|kv_a, a shared expert's gate|up) and odd ones (K not a multiple of 8: the
 * scalar path; row counts not a multiple of a block's 4).
 */
@Tag("gpu")
class GemvTokenGroupGpuTest {
  @ParameterizedTest
  @CsvSource({
    // rows of W1, rows of W2 (0: one GEMV), K, tokens
    "2048,0,2048,5",
    "3072,576,2048,5",
    "2048,0,2048,8",
    "3072,576,2048,7",
    "37,5,72,6",
    "130,7,1408,9",
    "3,2,77,8", // K % 8 != 0
    "255,0,7168,12",
    "100,30,264,13",
    "513,0,1000,17",
    "64,8,256,3"
  })
  void groupsOfEightGiveTheBitsOfGroupsOfFour(int m1, int m2, int k, int n) {
    Rand r = new Rand();
    int m = m1 + m2;
    Rand.Bf16 w = r.bf16(m * k, 0.5f);
    float[] x = r.uniform(n * k, 1f);
    float[] want = GemvGpuTest.reference(w.values(), x, m, k, n);
    String seed = "seed " + r.seed();
    Gpu.run(
        s -> {
          RingmasterKernels kk = Gpu.kernels();
          int before = kk.gemvTokenGroup();
          long wp = s.bf16(w.bits()).ptr();
          long xp = s.f32(x).ptr();
          try {
            float[][] gemv = new float[2][];
            float[][] gemv2 = new float[2][];
            float[][] swiglu = new float[2][];
            for (int g = 0; g < 2; g++) {
              kk.useGemvTokenGroup(g == 0 ? 4 : 8);
              DeviceBuffer y = s.poisoned((long) n * m);
              kk.gemv(s.stream(), y.ptr(), wp, xp, m, k, n);
              gemv[g] = s.read(y, n * m);
              if (m2 > 0) {
                gemv2[g] = twoGemvs(s, kk, wp, xp, m1, m2, k, n);
              }
              if (m % 2 == 0) {
                int inter = m / 2;
                DeviceBuffer out = s.poisoned((long) n * inter);
                kk.gemvSwiglu(s.stream(), out.ptr(), wp, xp, inter, k, n);
                swiglu[g] = s.read(out, n * inter);
              }
            }
            Compare.assertClose("groups of 8, " + seed, gemv[1], want, 1e-5);
            assertThat(Compare.bits(gemv[1]))
                .as("gemv, groups of 8 vs 4, %s", seed)
                .isEqualTo(Compare.bits(gemv[0]));
            if (m2 > 0) {
              assertThat(Compare.bits(gemv2[1]))
                  .as("gemv2, groups of 8 vs 4, %s", seed)
                  .isEqualTo(Compare.bits(gemv2[0]));
              assertThat(Compare.bits(gemv2[1]))
                  .as("gemv2 vs gemv of the stacked rows, %s", seed)
                  .isEqualTo(Compare.bits(gemv[1]));
            }
            if (m % 2 == 0) {
              assertThat(Compare.bits(swiglu[1]))
                  .as("gemvSwiglu, groups of 8 vs 4, %s", seed)
                  .isEqualTo(Compare.bits(swiglu[0]));
            }
          } finally {
            kk.useGemvTokenGroup(before);
          }
        });
  }

  /** The router GEMV of the routing kernel: the same logits with groups of 4 and of 8. */
  @ParameterizedTest
  @CsvSource({"5,64,6,2048", "8,64,6,2048", "9,72,5,100", "16,160,6,512"})
  void routerLogitsAreTheSameWithGroupsOfEight(int n, int e, int k, int hidden) {
    Rand r = new Rand();
    Rand.Bf16 gate = r.bf16(e * hidden, 0.05f);
    float[] x = r.uniform(n * hidden, 1f);
    MoeRouting routing =
        MoeRouting.of(
            new MoeConfig(
                e,
                k,
                32,
                0,
                MoeConfig.Scoring.SOFTMAX,
                MoeConfig.Selection.GREEDY,
                1,
                1,
                false,
                1.0,
                false));
    String seed = "seed " + r.seed();
    Gpu.run(
        s -> {
          RingmasterKernels kk = Gpu.kernels();
          int before = kk.gemvTokenGroup();
          DeviceBuffer g = s.bf16(gate.bits());
          DeviceBuffer xs = s.f32(x);
          float[][] logits = new float[2][];
          int[][] experts = new int[2][];
          try (MoeWorkspace ws = new MoeWorkspace(n, e, k, hidden, 8)) {
            for (int i = 0; i < 2; i++) {
              kk.useGemvTokenGroup(i == 0 ? 4 : 8);
              DeviceBuffer l = s.poisoned((long) n * e);
              DeviceBuffer ex = s.alloc(4L * n * k);
              DeviceBuffer w = s.poisoned((long) n * k);
              kk.smallBatchMoe()
                  .routerRoute(
                      s.stream(),
                      ws,
                      l.ptr(),
                      ex.ptr(),
                      w.ptr(),
                      g.ptr(),
                      xs.ptr(),
                      hidden,
                      0L,
                      n,
                      routing,
                      false);
              logits[i] = s.read(l, n * e);
              experts[i] = s.readInts(ex, n * k);
            }
          } finally {
            kk.useGemvTokenGroup(before);
          }
          float[] want = GemvGpuTest.reference(gate.values(), x, e, hidden, n);
          Compare.assertClose("router logits, groups of 8, " + seed, logits[1], want, 1e-5);
          assertThat(Compare.bits(logits[1]))
              .as("router logits, groups of 8 vs 4, %s", seed)
              .isEqualTo(Compare.bits(logits[0]));
          assertThat(experts[1]).as("experts, %s", seed).isEqualTo(experts[0]);
        });
  }

  /** {@code [y1 | y2]} per token from one {@link RingmasterKernels#gemv2} launch. */
  private static float[] twoGemvs(
      DeviceScope s, RingmasterKernels kk, long w, long x, int m1, int m2, int k, int n) {
    DeviceBuffer y1 = s.poisoned((long) n * m1);
    DeviceBuffer y2 = s.poisoned((long) n * m2);
    kk.gemv2(s.stream(), y1.ptr(), w, m1, y2.ptr(), w + 2L * m1 * k, m2, x, k, n);
    float[] a = s.read(y1, n * m1);
    float[] b = s.read(y2, n * m2);
    float[] out = new float[n * (m1 + m2)];
    for (int t = 0; t < n; t++) {
      System.arraycopy(a, t * m1, out, t * (m1 + m2), m1);
      System.arraycopy(b, t * m2, out, t * (m1 + m2) + m1, m2);
    }
    return out;
  }
}
