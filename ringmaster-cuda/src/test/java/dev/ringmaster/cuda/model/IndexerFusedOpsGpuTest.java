package dev.ringmaster.cuda.model;

import static dev.ringmaster.cuda.model.CudaCausalLmGpuTest.exact;
import static dev.ringmaster.cuda.model.CudaCausalLmGpuTest.fixture;
import static dev.ringmaster.cuda.model.CudaCausalLmGpuTest.greedy;
import static dev.ringmaster.cuda.model.CudaCausalLmGpuTest.promptOf;
import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.cuda.model.CudaCausalLmGpuTest.Run;
import dev.ringmaster.runtime.KernelTuning;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The DSA indexer's fused launches ({@code indexer-fused-ops}: {@code wk | weights_proj} as one
 * GEMV, the key's norm, ropes and append or FP8 quantization as one launch; {@code
 * indexer-topk-candidates}) change no bit of a model's output: greedy runs of the two DSA fixtures
 * (sparse prefill, sparse decode graphs, bf16 and FP8 indexer keys) give the same tokens and the
 * same logits, float for float, with the defaults and with both options off.
 */
@Tag("gpu")
class IndexerFusedOpsGpuTest {
  private static final int STEPS = 12;

  @ParameterizedTest
  @CsvSource({
    "deepseek_v32_dsa,32,auto",
    "deepseek_v32_dsa,5,fp8_e4m3",
    "glm_moe_dsa_shared,32,fp8_e4m3",
    "glm_moe_dsa_shared,6,auto"
  })
  void fusedAndSeparateIndexerLaunchesGiveTheSameLogits(String name, int promptLen, String keys)
      throws IOException {
    Path dir = fixture(name);
    int[] prompt = Arrays.copyOf(promptOf(dir), promptLen);
    KernelTuning fused = exact().tuning().with("indexer-cache-dtype", keys);
    assertThat(fused.indexerFusedOps()).isTrue();
    KernelTuning separate =
        fused.with("indexer-fused-ops", false).with("indexer-topk-candidates", false);
    Run a;
    Run b;
    try (CudaCausalLm lm = CudaCausalLm.load(dir, exact().withTuning(fused))) {
      a = greedy(lm, prompt, STEPS);
    }
    try (CudaCausalLm lm = CudaCausalLm.load(dir, exact().withTuning(separate))) {
      b = greedy(lm, prompt, STEPS, a.tokens());
    }
    assertThat(b.tokens())
        .as("%s prompt %d, %s keys: tokens", name, promptLen, keys)
        .containsExactly(a.tokens());
    for (int s = 0; s < STEPS; s++) {
      assertThat(b.logits()[s])
          .as("%s prompt %d, %s keys: logits of step %d", name, promptLen, keys, s)
          .containsExactly(a.logits()[s]);
    }
  }
}
