package dev.ringmaster.engine.batch;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.backend.DType;
import dev.ringmaster.backend.cpu.model.CausalLm;
import dev.ringmaster.engine.SamplingParams;
import dev.ringmaster.engine.spec.ServingSpeculation;
import dev.ringmaster.engine.spec.SpeculativeAlgorithm;
import dev.ringmaster.engine.spec.SpeculativeConfig;
import dev.ringmaster.engine.spec.SpeculativePolicy;
import dev.ringmaster.model.random.RandomEagle3HeadWriter;
import dev.ringmaster.runtime.DraftHead;
import dev.ringmaster.testing.RepoPaths;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The batch engine with EAGLE3 drafts (random-weight heads over the golden fixtures and the
 * embedded model): greedy outputs of 8 concurrent requests equal those without speculation, with
 * and without the overlap schedule and with a pool small enough to preempt, and every block comes
 * back.
 */
class Eagle3BatchTest {
  @TempDir Path tmp;

  @ParameterizedTest(name = "{0} k={1} overlap {2} blocks {3}")
  @CsvSource({
    "fixtures/golden/deepseek_v3_basic, 3, true, 4096",
    "fixtures/golden/deepseek_v3_basic, 2, false, 40",
    "fixtures/golden/qwen3_moe_basic, 4, true, 4096",
    "models/sotu-moe, 3, true, 4096",
  })
  void greedyOutputsEqualOutputsWithoutSpeculation(
      String target, int k, boolean overlap, int blocks) throws Exception {
    try (CausalLm lm = CausalLm.load(RepoPaths.require(target))) {
      Path dir = tmp.resolve("head");
      RandomEagle3HeadWriter.write(
          RandomEagle3HeadWriter.config(lm.config(), lm.config().vocabSize() / 2, null),
          dir,
          DType.BF16,
          13);
      try (DraftHead head = lm.loadEagle3Head(dir)) {
        List<int[]> prompts = SpeculativeBatchTest.prompts(lm.config().vocabSize(), 8);
        BatchConfig cfg = new BatchConfig(8, 64, 32, 4, blocks).withOverlap(overlap);
        SamplingParams greedy = new SamplingParams(0, 1, 0, 0, 24, true, List.of());
        var plain =
            SpeculativeBatchTest.run(lm, cfg, null, prompts, i -> greedy, i -> new Collector());
        ServingSpeculation spec =
            ServingSpeculation.eagle3(
                SpeculativeConfig.of(SpeculativeAlgorithm.EAGLE3, k),
                head,
                SpeculativePolicy.ALWAYS);
        var fast =
            SpeculativeBatchTest.run(lm, cfg, spec, prompts, i -> greedy, i -> new Collector());
        for (int i = 0; i < prompts.size(); i++) {
          assertThat(fast.outputs().get(i))
              .as("request %d", i)
              .containsExactly(plain.outputs().get(i));
        }
        assertThat(fast.spec().draftTokens()).as("the head drafted").isPositive();
      }
    }
  }
}
