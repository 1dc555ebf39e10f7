package dev.ringmaster.cuda.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.backend.DType;
import dev.ringmaster.backend.cpu.CpuMatmul;
import dev.ringmaster.backend.cpu.CpuMatrix;
import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.testing.Compare;
import dev.ringmaster.cuda.testing.Gpu;
import dev.ringmaster.cuda.testing.Rand;
import dev.ringmaster.model.arch.Router;
import dev.ringmaster.model.config.MoeConfig;
import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.Tag;
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
    new Router(cfg, gate, bias).route(x, n, wantE, wantW);
    float[] logits = new float[n * e];
    CpuMatmul.matmul(logits, x, n, gate);
    Gpu.run(
        s -> {
          DeviceBuffer ex = s.alloc(4L * n * k);
          DeviceBuffer w = s.poisoned((long) n * k);
          Gpu.kernels()
              .moeRoute(
                  s.stream(),
                  ex.ptr(),
                  w.ptr(),
                  s.f32(logits).ptr(),
                  hasBias ? s.f32(bias).ptr() : 0,
                  n,
                  e,
                  k,
                  scoring == MoeConfig.Scoring.SOFTMAX ? 0 : 1,
                  selection.ordinal(),
                  groups,
                  topKGroups,
                  norm,
                  (float) scaling);
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
  void routedExpertsMatchTheReference(int n, int e, int k, int hidden, int inter, boolean acc) {
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
                .moeExperts(
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
