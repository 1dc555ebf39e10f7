package dev.ringmaster.cuda.model;

import dev.ringmaster.backend.cpu.model.CausalLm;
import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.KvCache;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** Diagnostic: which prefill path breaks the full prefill at some lengths. */
@Tag("gpu")
class PrefixPagesDiagGpuTest {
  @Test
  void report() throws Exception {
    Path dir = CudaCausalLmGpuTest.fixture("deepseek_v3_bf16");
    SplittableRandom r = new SplittableRandom(40);
    int[] all = new int[140];
    for (int i = 0; i < all.length; i++) all[i] = 2 + r.nextInt(300);
    int[][] prompts = {Arrays.copyOf(all, 129), Arrays.copyOf(all, 128), Arrays.copyOf(all, 130)};
    CudaModelOptions base = CudaCausalLmGpuTest.exact().withBlockSize(16);
    Map<String, CudaModelOptions> variants = new LinkedHashMap<>();
    variants.put("default", base);
    variants.put("no-expanded", base.withTuning(base.tuning().with("mla-expanded-prefill", false)));
    variants.put("no-prefill-gemm", base.withTuning(base.tuning().with("mla-prefill-gemm", false)));
    variants.put(
        "no-grouped", base.withTuning(base.tuning().with("moe-grouped-min-tokens", 1 << 20)));
    variants.put("no-moe-mma", base.withTuning(base.tuning().with("moe-mma-min-tokens", 1 << 20)));
    variants.put("no-mla-tc", base.withTuning(base.tuning().with("mla-tensor-cores", false)));
    variants.put("gemv4", base.withGemvMaxTokens(4));
    try (CausalLm cpu = CausalLm.load(dir)) {
      int vocab = cpu.config().vocabSize();
      float[][] ref = new float[prompts.length][];
      for (int q = 0; q < prompts.length; q++) {
        int n = prompts[q].length;
        int[] rows = new int[n];
        for (int i = 0; i < n; i++) rows[i] = i;
        ref[q] =
            cpu.forward(prompts[q], BatchLayout.single(n, 0), new KvCache[] {cpu.newCache()}, rows);
      }
      for (var v : variants.entrySet()) {
        try (CudaCausalLm lm = CudaCausalLm.load(dir, v.getValue())) {
          StringBuilder sb = new StringBuilder("DIAG " + v.getKey() + ":");
          for (int q = 0; q < prompts.length; q++) {
            int n = prompts[q].length;
            int[] rows = new int[n];
            for (int i = 0; i < n; i++) rows[i] = i;
            KvCache c = lm.newCache();
            float[] got = lm.forward(prompts[q], BatchLayout.single(n, 0), new KvCache[] {c}, rows);
            c.close();
            int bad = 0;
            double worst = 0;
            int worstAt = -1;
            for (int i = 0; i < n; i++) {
              double e = rel(ref[q], got, i * vocab, vocab);
              if (e > 2e-2) bad++;
              if (e > worst) {
                worst = e;
                worstAt = i;
              }
            }
            sb.append(String.format(" len%d: bad %d worst %.2e at %d;", n, bad, worst, worstAt));
          }
          System.out.println(sb);
        }
      }
    }
  }

  private static double rel(float[] a, float[] b, int off, int n) {
    double s = 0, d = 0;
    for (int i = off; i < off + n; i++) {
      s = Math.max(s, Math.abs(a[i]));
      d = Math.max(d, Math.abs(a[i] - b[i]));
    }
    return d / s;
  }
}
