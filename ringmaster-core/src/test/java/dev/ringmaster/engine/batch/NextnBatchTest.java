package dev.ringmaster.engine.batch;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ringmaster.backend.DType;
import dev.ringmaster.backend.cpu.model.CausalLm;
import dev.ringmaster.engine.SamplingParams;
import dev.ringmaster.engine.spec.ServingSpeculation;
import dev.ringmaster.model.random.RandomModelWriter;
import dev.ringmaster.testing.RepoPaths;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The batch engine with NEXTN drafts (random-weight MTP layers shaped as the golden fixtures):
 * greedy outputs of 8 concurrent requests equal those without speculation, with and without the
 * overlap schedule and with a pool small enough to preempt, and every block comes back.
 */
class NextnBatchTest {
  @TempDir Path tmp;

  private Path withMtp(String fixture) throws Exception {
    ObjectMapper json = new ObjectMapper();
    ObjectNode cfg =
        (ObjectNode)
            json.readTree(Files.readString(RepoPaths.require(fixture).resolve("config.json")));
    cfg.put("num_nextn_predict_layers", 1);
    Path config = tmp.resolve("config.json");
    Files.writeString(config, json.writeValueAsString(cfg));
    RandomModelWriter.write(config, tmp.resolve("model"), DType.BF16, 11);
    return tmp.resolve("model");
  }

  @ParameterizedTest(name = "{0} k={1} overlap {2} blocks {3}")
  @CsvSource({
    "fixtures/golden/deepseek_v3_basic, 3, true, 4096",
    "fixtures/golden/deepseek_v3_basic, 2, false, 40",
    "fixtures/golden/qwen3_moe_basic, 4, true, 4096",
    "fixtures/golden/deepseek_v32_dsa, 3, true, 4096",
    "fixtures/golden/glm_moe_dsa_shared, 2, false, 40",
  })
  void greedyOutputsEqualOutputsWithoutSpeculation(
      String fixture, int k, boolean overlap, int blocks) throws Exception {
    try (CausalLm lm = CausalLm.load(withMtp(fixture))) {
      List<int[]> prompts = SpeculativeBatchTest.prompts(lm.config().vocabSize(), 8);
      BatchConfig cfg = new BatchConfig(8, 64, 32, 4, blocks).withOverlap(overlap);
      SamplingParams greedy = new SamplingParams(0, 1, 0, 0, 24, true, List.of());
      var plain =
          SpeculativeBatchTest.run(lm, cfg, null, prompts, i -> greedy, i -> new Collector());
      ServingSpeculation spec = SpeculativeBatchTest.always("NEXTN", null, k);
      var fast =
          SpeculativeBatchTest.run(lm, cfg, spec, prompts, i -> greedy, i -> new Collector());
      for (int i = 0; i < prompts.size(); i++) {
        assertThat(fast.outputs().get(i))
            .as("request %d", i)
            .containsExactly(plain.outputs().get(i));
      }
      assertThat(fast.spec().draftTokens()).as("the MTP layer drafted").isPositive();
    }
  }
}
