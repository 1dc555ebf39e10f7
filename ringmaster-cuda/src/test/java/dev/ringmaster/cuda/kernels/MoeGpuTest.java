package dev.ringmaster.cuda.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.backend.DType;
import dev.ringmaster.backend.cpu.CpuKernelContext;
import dev.ringmaster.backend.cpu.CpuMatmul;
import dev.ringmaster.backend.cpu.CpuMatrix;
import dev.ringmaster.backend.cpu.model.Router;
import dev.ringmaster.cuda.driver.CudaDriver;
import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.testing.Compare;
import dev.ringmaster.cuda.testing.DeviceScope;
import dev.ringmaster.cuda.testing.Gpu;
import dev.ringmaster.cuda.testing.Rand;
import dev.ringmaster.model.config.MoeConfig;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

@Tag("gpu")
class MoeGpuTest {
  @ParameterizedTest
  @CsvSource({
    // tokens, experts, topK, scoring, selection, groups, topKGroups, norm, scaling, bias
    "1,64,6,SOFTMAX,GREEDY,1,1,false,1.0,false",
    "13,64,6,SOFTMAX,GREEDY,1,1,true,1.0,false",
    "9,160,6,SOFTMAX,GROUP_LIMITED_GREEDY,8,3,false,16.0,false",
    "31,256,8,SIGMOID,NOAUX_TC,8,4,true,2.5,true",
    "5,128,8,SOFTMAX,GREEDY,1,1,true,1.0,false",
    "7,72,5,SIGMOID,NOAUX_TC,4,2,false,1.0,true"
  })
  void routingMatchesTheCpuRouter(
      int n,
      int e,
      int k,
      MoeConfig.Scoring scoring,
      MoeConfig.Selection selection,
      int groups,
      int topKGroups,
      boolean norm,
      double scaling,
      boolean hasBias) {
    Rand r = new Rand();
    int hidden = 64;
    MoeConfig cfg =
        new MoeConfig(e, k, 32, 0, scoring, selection, groups, topKGroups, norm, scaling, hasBias);
    float[] gateW = r.uniform(e * hidden, 0.5f);
    // CPU kernels read weights from native or mapped memory (as loaded models are), not the heap.
    MemorySegment gateSeg =
        java.lang.foreign.Arena.ofAuto()
            .allocateFrom(java.lang.foreign.ValueLayout.JAVA_FLOAT, gateW);
    CpuMatrix gate = new CpuMatrix(gateSeg, DType.F32, e, hidden);
    float[] bias = hasBias ? r.uniform(e, 0.1f) : null;
    float[] x = r.uniform(n * hidden, 1f);
    int[] wantE = new int[n * k];
    float[] wantW = new float[n * k];
    new Router(CpuKernelContext.shared(), cfg, gate, bias).route(x, n, wantE, wantW);
    float[] logits = new float[n * e];
    CpuMatmul.matmul(CpuKernelContext.shared(), logits, x, n, gate);
    Gpu.run(
        s -> {
          DeviceBuffer ex = s.alloc(4L * n * k);
          DeviceBuffer w = s.poisoned((long) n * k);
          Gpu.kernels()
              .moe()
              .moeRoute(
                  s.stream(),
                  ex.ptr(),
                  w.ptr(),
                  s.f32(logits).ptr(),
                  hasBias ? s.f32(bias).ptr() : 0,
                  n,
                  MoeRouting.of(cfg));
          assertThat(s.readInts(ex, n * k)).as("experts, seed %d", r.seed()).containsExactly(wantE);
          Compare.assertClose("route weights", s.read(w, n * k), wantW, 1e-5);
        });
  }

  @ParameterizedTest
  @CsvSource({
    // tokens, experts, topK, hidden, inter, accumulate
    "2,10,6,1024,704,false",
    "8,64,6,256,176,true",
    "33,16,4,72,40,false",
    "3,8,2,100,36,true",
    "64,32,8,512,128,false"
  })
  void cudaCoreExpertsMatchTheReference(int n, int e, int k, int hidden, int inter, boolean acc) {
    Rand r = new Rand();
    Rand.Bf16 w13 = r.bf16(e * 2 * inter * hidden, 0.1f);
    Rand.Bf16 w2 = r.bf16(e * hidden * inter, 0.1f);
    float[] x = r.uniform(n * hidden, 1f);
    float[] prior = r.uniform(n * hidden, 1f);
    int[] experts = new int[n * k];
    float[] weights = new float[n * k];
    for (int t = 0; t < n; t++) {
      // distinct experts per token, skewed towards low ids so some experts get many tokens
      for (int j = 0; j < k; j++) {
        int pick;
        boolean dup;
        do {
          pick = r.nextInt(2) == 0 ? r.nextInt(Math.min(e, k + 2)) : r.nextInt(e);
          dup = false;
          for (int q = 0; q < j; q++) {
            dup |= experts[t * k + q] == pick;
          }
        } while (dup);
        experts[t * k + j] = pick;
        weights[t * k + j] = (float) r.random().nextDouble();
      }
    }
    float[] want = reference(x, w13.values(), w2.values(), experts, weights, n, k, hidden, inter);
    if (acc) {
      for (int i = 0; i < want.length; i++) {
        want[i] += prior[i];
      }
    }
    Gpu.run(
        s -> {
          try (MoeWorkspace ws = new MoeWorkspace(n, e, k, hidden, inter)) {
            ws.h.poison(s.stream());
            ws.y.poison(s.stream());
            DeviceBuffer out = acc ? s.f32(prior) : s.poisoned((long) n * hidden);
            Gpu.kernels()
                .moe()
                .moeExpertsFused(
                    s.stream(),
                    ws,
                    out.ptr(),
                    s.f32(x).ptr(),
                    s.bf16(w13.bits()).ptr(),
                    s.bf16(w2.bits()).ptr(),
                    s.i32(experts).ptr(),
                    s.f32(weights).ptr(),
                    n,
                    hidden,
                    inter,
                    acc);
            Compare.assertClose("moe seed " + r.seed(), s.read(out, n * hidden), want, 1e-4);
          }
        });
  }

  @ParameterizedTest
  @CsvSource({
    // tokens, experts, topK, hidden, inter, accumulate, tokens sent to expert 0
    "1,8,6,2048,1408,false,0", // DeepSeek-V2-Lite expert shape, one token per expert
    "17,10,6,2048,1408,true,0",
    "3,7,2,96,160,false,0", // partial pipeline stages and row blocks, odd expert count
    "64,13,4,72,40,true,64", // K not a multiple of 32, one expert with 64 tokens (2 passes)
    "200,33,6,128,80,false,120", // 120 tokens on expert 0: passes of 32, 32, 32, 24
    "40,64,6,256,176,false,0", // experts with no token
    "9,160,8,64,8,true,0", // inter 8: one 16-byte unit per row
    // the deepseek_v3_bf16 fixture's shape over one prefill step of more than 128 tokens
    "129,8,2,64,8,false,0",
    "130,8,2,64,8,true,0",
    "129,8,2,64,8,false,33", // expert 0: a pass of 32, then one of a single token
    "129,8,2,64,8,false,129", // every token on expert 0: passes of 32, 32, 32, 32, 1
    "130,8,2,64,8,true,130"
  })
  void tensorCoreExpertsMatchTheReference(
      int n, int e, int k, int hidden, int inter, boolean acc, int hot) {
    Rand r = new Rand();
    Rand.Bf16 w13 = r.bf16(e * 2 * inter * hidden, 0.1f);
    Rand.Bf16 w2 = r.bf16(e * hidden * inter, 0.1f);
    float[] x = r.uniform(n * hidden, 1f);
    float[] prior = r.uniform(n * hidden, 1f);
    int[] experts = new int[n * k];
    float[] weights = new float[n * k];
    route(r, n, e, k, hot, experts, weights);
    float[] want = reference(x, w13.values(), w2.values(), experts, weights, n, k, hidden, inter);
    if (acc) {
      for (int i = 0; i < want.length; i++) {
        want[i] += prior[i];
      }
    }
    Gpu.run(
        s -> {
          try (MoeWorkspace ws = new MoeWorkspace(n, e, k, hidden, inter)) {
            poison(s, ws);
            DeviceBuffer out = acc ? s.f32(prior) : s.poisoned((long) n * hidden);
            Gpu.kernels()
                .moe()
                .moeExpertsMma(
                    s.stream(),
                    ws,
                    out.ptr(),
                    s.f32(x).ptr(),
                    s.bf16(w13.bits()).ptr(),
                    s.bf16(w2.bits()).ptr(),
                    s.i32(experts).ptr(),
                    s.f32(weights).ptr(),
                    n,
                    hidden,
                    inter,
                    acc);
            // bf16 activations and intermediate: a few 1e-3 against the f32/f64 reference
            Compare.assertClose("moe mma seed " + r.seed(), s.read(out, n * hidden), want, 1e-2);
          }
        });
  }

  /**
   * A token's output from the tensor-core experts is bit-identical whichever tokens share its
   * experts, in which order they come and how the pairs were sorted: the whole batch twice, a
   * reversed half of it, and one token alone.
   */
  @Test
  void tensorCoreExpertsDoNotDependOnTheBatch() {
    Rand r = new Rand();
    int n = 48;
    int e = 16;
    int k = 4;
    int hidden = 256;
    int inter = 96;
    Rand.Bf16 w13 = r.bf16(e * 2 * inter * hidden, 0.1f);
    Rand.Bf16 w2 = r.bf16(e * hidden * inter, 0.1f);
    float[] x = r.uniform(n * hidden, 1f);
    int[] experts = new int[n * k];
    float[] weights = new float[n * k];
    // 40 tokens on expert 0: two passes (32 + 8) in the full batch, one in the half batch
    route(r, n, e, k, 40, experts, weights);
    int[] half = new int[n / 2];
    for (int i = 0; i < half.length; i++) {
      half[i] = n - 1 - 2 * i;
    }
    Gpu.run(
        s -> {
          long w13d = s.bf16(w13.bits()).ptr();
          long w2d = s.bf16(w2.bits()).ptr();
          float[] all = runMma(s, w13d, w2d, x, experts, weights, n, e, k, hidden, inter);
          float[] again = runMma(s, w13d, w2d, x, experts, weights, n, e, k, hidden, inter);
          assertThat(Compare.bits(again))
              .as("same batch twice, seed %d", r.seed())
              .isEqualTo(Compare.bits(all));
          for (int[] tokens : new int[][] {half, {5}}) {
            int m = tokens.length;
            float[] xs = new float[m * hidden];
            int[] es = new int[m * k];
            float[] ws = new float[m * k];
            for (int i = 0; i < m; i++) {
              int t = tokens[i];
              System.arraycopy(x, t * hidden, xs, i * hidden, hidden);
              System.arraycopy(experts, t * k, es, i * k, k);
              System.arraycopy(weights, t * k, ws, i * k, k);
            }
            float[] part = runMma(s, w13d, w2d, xs, es, ws, m, e, k, hidden, inter);
            for (int i = 0; i < m; i++) {
              int t = tokens[i];
              assertThat(Compare.bits(Arrays.copyOfRange(part, i * hidden, (i + 1) * hidden)))
                  .as("token %d among %d tokens, seed %d", t, m, r.seed())
                  .isEqualTo(Compare.bits(Arrays.copyOfRange(all, t * hidden, (t + 1) * hidden)));
            }
          }
        });
  }

  /**
   * The 64-token-pass kernels against the reference, and bit for bit against the 32-token ones per
   * pair (the intermediate row and the weighted output row of every routed pair, and the combined
   * output). Routing: the first 130 / 64 / 65 / 33 tokens send slot 0 / 1 / 2 / 3 to experts 0 / 1
   * / 2 / 3 (passes of 64 + 64 + 2, 64, 64 + 1 and one of 33 tokens), experts 4-7 and the last 4
   * get no token, the other slots pick uniformly among the rest (about 32, 77 and 110 tokens each
   * at 200, 513 and 1000 tokens: single and double passes, tails on 1, 2, 4 and 8 tiles).
   */
  @ParameterizedTest
  @CsvSource({
    // tokens, experts, topK, hidden, inter, accumulate
    "200,40,6,256,176,false", // K of the down pass not a multiple of 32
    "513,48,6,136,80,true", // partial row blocks and pipeline stages on both sides
    "1000,64,6,512,96,false"
  })
  void wideTensorCoreExpertsMatchTheReferenceAndTheNarrowOnes(
      int n, int e, int k, int hidden, int inter, boolean acc) {
    Rand r = new Rand();
    Rand.Bf16 w13 = r.bf16(e * 2 * inter * hidden, 0.1f);
    Rand.Bf16 w2 = r.bf16(e * hidden * inter, 0.1f);
    float[] x = r.uniform(n * hidden, 1f);
    float[] prior = r.uniform(n * hidden, 1f);
    int[] experts = new int[n * k];
    float[] weights = new float[n * k];
    int[] quota = {130, 64, 65, 33};
    for (int t = 0; t < n; t++) {
      for (int j = 0; j < k; j++) {
        int pick;
        boolean dup;
        do {
          pick = j < quota.length && t < quota[j] ? j : 8 + r.nextInt(e - 12);
          dup = false;
          for (int q = 0; q < j; q++) {
            dup |= experts[t * k + q] == pick;
          }
        } while (dup);
        experts[t * k + j] = pick;
        weights[t * k + j] = (float) r.random().nextDouble();
      }
    }
    float[] want = reference(x, w13.values(), w2.values(), experts, weights, n, k, hidden, inter);
    if (acc) {
      for (int i = 0; i < want.length; i++) {
        want[i] += prior[i];
      }
    }
    Gpu.run(
        s -> {
          long w13d = s.bf16(w13.bits()).ptr();
          long w2d = s.bf16(w2.bits()).ptr();
          long xd = s.f32(x).ptr();
          long ed = s.i32(experts).ptr();
          long wd = s.f32(weights).ptr();
          int pairs = n * k;
          int[][][] perPass = new int[2][][];
          int[] passes = {MoeKernels.MOE_MMA_WIDE_PASS_TOKENS, MoeKernels.MOE_MMA_PASS_TOKENS};
          for (int v = 0; v < passes.length; v++) {
            try (MoeWorkspace ws = new MoeWorkspace(n, e, k, hidden, inter)) {
              poison(s, ws);
              DeviceBuffer out = acc ? s.f32(prior) : s.poisoned((long) n * hidden);
              Gpu.kernels()
                  .moe()
                  .moeExpertsMma(
                      s.stream(),
                      ws,
                      out.ptr(),
                      xd,
                      w13d,
                      w2d,
                      ed,
                      wd,
                      n,
                      hidden,
                      inter,
                      acc,
                      passes[v]);
              float[] got = s.read(out, n * hidden);
              Compare.assertClose(
                  "moe mma, passes of " + passes[v] + ", seed " + r.seed(), got, want, 1e-2);
              // the bf16 intermediate is in expert-sorted order, and the order of an expert's
              // pairs is not fixed (align uses atomics): compare it per pair
              int[] sorted = s.readInts(ws.sortedPairs, pairs);
              int[] h = s.readInts(ws.h, pairs * inter / 2);
              int[] hByPair = new int[pairs * inter / 2];
              for (int q = 0; q < pairs; q++) {
                System.arraycopy(h, q * inter / 2, hByPair, sorted[q] * inter / 2, inter / 2);
              }
              perPass[v] =
                  new int[][] {
                    hByPair, Compare.bits(s.read(ws.y, pairs * hidden)), Compare.bits(got)
                  };
            }
          }
          String[] what = {"intermediate rows", "pair output rows", "combined output"};
          for (int i = 0; i < what.length; i++) {
            assertThat(perPass[0][i])
                .as("%s, passes of 64 vs 32 tokens, seed %d", what[i], r.seed())
                .isEqualTo(perPass[1][i]);
          }
        });
  }

  /** Passes of 64 tokens from 48 routed pairs per expert on average. */
  @Test
  void widePassesFromFortyEightPairsPerExpert() {
    assertThat(MoeKernels.moeMmaPassTokens(511, 6, 64)).isEqualTo(32);
    assertThat(MoeKernels.moeMmaPassTokens(512, 6, 64)).isEqualTo(64);
    assertThat(MoeKernels.moeMmaPassTokens(128, 6, 64)).isEqualTo(32);
    assertThat(MoeKernels.moeMmaPassTokens(1535, 8, 256)).isEqualTo(32);
    assertThat(MoeKernels.moeMmaPassTokens(1536, 8, 256)).isEqualTo(64);
  }

  private static float[] runMma(
      DeviceScope s,
      long w13,
      long w2,
      float[] x,
      int[] experts,
      float[] weights,
      int n,
      int e,
      int k,
      int hidden,
      int inter) {
    try (MoeWorkspace ws = new MoeWorkspace(n, e, k, hidden, inter)) {
      poison(s, ws);
      DeviceBuffer out = s.poisoned((long) n * hidden);
      Gpu.kernels()
          .moe()
          .moeExpertsMma(
              s.stream(),
              ws,
              out.ptr(),
              s.f32(x).ptr(),
              w13,
              w2,
              s.i32(experts).ptr(),
              s.f32(weights).ptr(),
              n,
              hidden,
              inter,
              false);
      return s.read(out, n * hidden);
    }
  }

  /** NaN in every scratch byte pattern the kernels read or write (0xffff is a bf16 NaN too). */
  private static void poison(DeviceScope s, MoeWorkspace ws) {
    CudaDriver.get().memsetD8Async(ws.h.ptr(), 0xff, ws.h.bytes(), s.stream().handle());
    ws.y.poison(s.stream());
  }

  /**
   * Distinct experts per token, skewed towards low ids so some experts get many tokens and high ids
   * often none; the first {@code hot} tokens send their first slot to expert 0.
   */
  static void route(Rand r, int n, int e, int k, int hot, int[] experts, float[] weights) {
    for (int t = 0; t < n; t++) {
      for (int j = 0; j < k; j++) {
        int pick;
        boolean dup;
        do {
          if (j == 0 && t < hot) {
            pick = 0;
          } else {
            pick = r.nextInt(2) == 0 ? r.nextInt(Math.min(e, k + 2)) : r.nextInt(e);
          }
          dup = false;
          for (int q = 0; q < j; q++) {
            dup |= experts[t * k + q] == pick;
          }
        } while (dup);
        experts[t * k + j] = pick;
        weights[t * k + j] = (float) r.random().nextDouble();
      }
    }
  }

  static float[] reference(
      float[] x,
      float[] w13,
      float[] w2,
      int[] experts,
      float[] weights,
      int n,
      int k,
      int hidden,
      int inter) {
    float[] out = new float[n * hidden];
    double[] h = new double[inter];
    for (int t = 0; t < n; t++) {
      for (int j = 0; j < k; j++) {
        int e = experts[t * k + j];
        for (int i = 0; i < inter; i++) {
          double g = 0;
          double u = 0;
          for (int c = 0; c < hidden; c++) {
            g += (double) w13[(e * 2 * inter + i) * hidden + c] * x[t * hidden + c];
            u += (double) w13[(e * 2 * inter + inter + i) * hidden + c] * x[t * hidden + c];
          }
          h[i] = g / (1 + Math.exp(-g)) * u;
        }
        for (int d = 0; d < hidden; d++) {
          double s = 0;
          for (int i = 0; i < inter; i++) {
            s += (double) w2[(e * hidden + d) * inter + i] * h[i];
          }
          out[t * hidden + d] += (float) (weights[t * k + j] * s);
        }
      }
    }
    return out;
  }
}
