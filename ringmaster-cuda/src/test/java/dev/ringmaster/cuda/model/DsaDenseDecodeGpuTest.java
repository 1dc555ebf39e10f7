package dev.ringmaster.cuda.model;

import static dev.ringmaster.cuda.model.CudaCausalLmGpuTest.exact;
import static dev.ringmaster.cuda.model.CudaCausalLmGpuTest.fixture;
import static dev.ringmaster.cuda.model.CudaCausalLmGpuTest.greedy;
import static dev.ringmaster.cuda.model.CudaCausalLmGpuTest.promptOf;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.ringmaster.cuda.model.CudaCausalLmGpuTest.Run;
import dev.ringmaster.runtime.KernelTuning;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code dsa-dense-decode}: a prompt no longer than {@code index_topk} (8 in both DSA fixtures) is
 * prefilled alike by every variant, then 12 decode steps run past it. With the option the decode
 * steps attend densely, so their logits match a model that attends densely everywhere ({@code
 * dsa-sparse-attention=false}) within 1e-3 (the two take different MLA decode launches: the split
 * kernel of the long-context graphs against the fused one); the default sparse decode differs from
 * both, which shows the steps past {@code index_topk} really select.
 */
@Tag("gpu")
class DsaDenseDecodeGpuTest {
  private static final int STEPS = 12;
  private static final int PROMPT = 6;

  @ParameterizedTest
  @ValueSource(strings = {"deepseek_v32_dsa", "glm_moe_dsa_shared"})
  void denseDecodeAfterASparseModelsPrefillAttendsToEveryPosition(String name) throws IOException {
    Path dir = fixture(name);
    int[] prompt = Arrays.copyOf(promptOf(dir), PROMPT);
    KernelTuning sparse = exact().tuning();
    Run dense;
    Run denseDecode;
    Run sparseRun;
    try (CudaCausalLm lm =
        CudaCausalLm.load(dir, exact().withTuning(sparse.with("dsa-sparse-attention", false)))) {
      dense = greedy(lm, prompt, STEPS);
    }
    try (CudaCausalLm lm =
        CudaCausalLm.load(dir, exact().withTuning(sparse.with("dsa-dense-decode", true)))) {
      denseDecode = greedy(lm, prompt, STEPS, dense.tokens());
    }
    try (CudaCausalLm lm = CudaCausalLm.load(dir, exact().withTuning(sparse))) {
      sparseRun = greedy(lm, prompt, STEPS, dense.tokens());
    }
    float largestGap = 0f;
    for (int s = 0; s < STEPS; s++) {
      assertThat(denseDecode.logits()[s])
          .as("%s: dense decode against dense attention, step %d", name, s)
          .containsExactly(dense.logits()[s], within(1e-3f));
      for (int v = 0; v < dense.logits()[s].length; v++) {
        largestGap =
            Math.max(largestGap, Math.abs(sparseRun.logits()[s][v] - dense.logits()[s][v]));
      }
    }
    assertThat(largestGap)
        .as("%s: sparse decode differs from dense past index_topk", name)
        .isGreaterThan(1e-2f);
  }
}
