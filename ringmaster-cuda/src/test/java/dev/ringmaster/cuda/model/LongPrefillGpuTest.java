package dev.ringmaster.cuda.model;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.backend.cpu.model.CausalLm;
import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.KvCache;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * One prefill step of 128 to 130 tokens against the CPU engine at every position, with the
 * tensor-core expert kernels (the default from 8 tokens on) and with the CUDA-core ones. The golden
 * fixtures' prompts are shorter than one such step, so the other model tests never run the expert
 * kernels on more than 128 tokens.
 */
@Tag("gpu")
class LongPrefillGpuTest {
  /** Relative logits tolerance of bf16 weights and cache, as in {@link CudaCausalLmGpuTest}. */
  private static final double BF16_TOL = 2e-2;

  @ParameterizedTest(name = "tensor-core experts: {0}")
  @ValueSource(booleans = {true, false})
  void everyPositionMatchesTheCpu(boolean tensorCoreExperts) throws IOException {
    Path dir = CudaCausalLmGpuTest.fixture("deepseek_v3_bf16");
    SplittableRandom r = new SplittableRandom(40);
    int[] all = new int[130];
    for (int i = 0; i < all.length; i++) {
      all[i] = 2 + r.nextInt(300);
    }
    CudaModelOptions o = CudaCausalLmGpuTest.exact().withBlockSize(16);
    if (!tensorCoreExperts) {
      o = o.withTuning(o.tuning().with("moe-mma-min-tokens", 1 << 20));
    }
    try (CausalLm cpu = CausalLm.load(dir);
        CudaCausalLm gpu = CudaCausalLm.load(dir, o)) {
      int vocab = cpu.config().vocabSize();
      for (int n = 128; n <= 130; n++) {
        int[] prompt = Arrays.copyOf(all, n);
        int[] rows = new int[n];
        for (int i = 0; i < n; i++) {
          rows[i] = i;
        }
        float[] want =
            cpu.forward(prompt, BatchLayout.single(n, 0), new KvCache[] {cpu.newCache()}, rows);
        float[] got;
        try (KvCache c = gpu.newCache()) {
          got = gpu.forward(prompt, BatchLayout.single(n, 0), new KvCache[] {c}, rows);
        }
        for (int i = 0; i < n; i++) {
          float[] wantRow = Arrays.copyOfRange(want, i * vocab, (i + 1) * vocab);
          float[] gotRow = Arrays.copyOfRange(got, i * vocab, (i + 1) * vocab);
          assertThat(CudaCausalLmGpuTest.relDiff(gotRow, wantRow))
              .as("%d-token prefill, position %d", n, i)
              .isLessThanOrEqualTo(BF16_TOL);
        }
      }
    }
  }
}
