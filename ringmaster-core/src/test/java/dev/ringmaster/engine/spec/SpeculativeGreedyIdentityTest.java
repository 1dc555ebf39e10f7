package dev.ringmaster.engine.spec;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.backend.cpu.model.CausalLm;
import dev.ringmaster.engine.Generator;
import dev.ringmaster.engine.SamplingParams;
import dev.ringmaster.model.tokenizer.Tokenizer;
import dev.ringmaster.testing.GoldenFixture;
import dev.ringmaster.testing.RepoPaths;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Greedy speculative decoding emits exactly the tokens of plain greedy decoding, for n-gram and
 * draft-model drafts, on an MLA and a GQA fixture and on the embedded model, at several draft
 * lengths. The trained draft's cases also check that its drafts were partly accepted and partly
 * rejected, so the accept and the rollback paths both ran.
 */
class SpeculativeGreedyIdentityTest {
  private static final Map<String, CausalLm> MODELS = new java.util.HashMap<>();

  @BeforeAll
  static void load() {
    for (String dir :
        List.of(
            "fixtures/golden/deepseek_v3_basic",
            "fixtures/golden/deepseek_v3_bf16",
            "fixtures/golden/qwen3_moe_basic",
            "fixtures/golden/qwen3_moe_f16",
            "models/sotu-moe",
            "models/sotu-moe/draft")) {
      MODELS.put(dir, CausalLm.load(RepoPaths.require(dir)));
    }
  }

  @AfterAll
  static void close() {
    MODELS.values().forEach(CausalLm::close);
  }

  private static int[] prompt(String target) {
    if (target.startsWith("models/")) {
      Tokenizer tok = Tokenizer.load(RepoPaths.require(target));
      return tok.encode(
          "We the People of the United States, in Order to form a more perfect Union, establish"
              + " Justice, insure domestic Tranquility, provide for the common defence");
    }
    return GoldenFixture.load(RepoPaths.require(target)).promptIds();
  }

  @ParameterizedTest(name = "{0} {1} draft {2} k={3}")
  @CsvSource({
    "fixtures/golden/deepseek_v3_basic, NGRAM, -, 1",
    "fixtures/golden/deepseek_v3_basic, NGRAM, -, 3",
    "fixtures/golden/deepseek_v3_basic, NGRAM, -, 6",
    "fixtures/golden/deepseek_v3_basic, STANDALONE, fixtures/golden/deepseek_v3_bf16, 1",
    "fixtures/golden/deepseek_v3_basic, STANDALONE, fixtures/golden/deepseek_v3_bf16, 4",
    "fixtures/golden/deepseek_v3_basic, STANDALONE, fixtures/golden/qwen3_moe_basic, 3",
    "fixtures/golden/qwen3_moe_basic, NGRAM, -, 2",
    "fixtures/golden/qwen3_moe_basic, NGRAM, -, 5",
    "fixtures/golden/qwen3_moe_basic, STANDALONE, fixtures/golden/qwen3_moe_f16, 2",
    "fixtures/golden/qwen3_moe_basic, STANDALONE, fixtures/golden/qwen3_moe_f16, 5",
    "fixtures/golden/qwen3_moe_basic, STANDALONE, fixtures/golden/deepseek_v3_basic, 4",
    "models/sotu-moe, NGRAM, -, 2",
    "models/sotu-moe, NGRAM, -, 5",
    "models/sotu-moe, STANDALONE, models/sotu-moe/draft, 1",
    "models/sotu-moe, STANDALONE, models/sotu-moe/draft, 3",
    "models/sotu-moe, STANDALONE, models/sotu-moe/draft, 6",
  })
  void greedyOutputIsPlainGreedyOutput(String target, String algorithm, String draft, int k) {
    CausalLm lm = MODELS.get(target);
    int[] prompt = prompt(target);
    SamplingParams greedy = new SamplingParams(0, 1, 0, 0, 48, true, List.of());
    int[] plain = new Generator(lm).generate(prompt, greedy, new int[0], t -> true).outputIds();

    SpeculativeConfig cfg = SpeculativeConfig.of(SpeculativeAlgorithm.parse(algorithm), k);
    CausalLm draftModel = draft.equals("-") ? null : MODELS.get(draft);
    List<Integer> streamed = new java.util.ArrayList<>();
    SpeculativeResult r =
        new SpeculativeGenerator(lm, cfg, draftModel)
            .generate(prompt, greedy, new int[0], t -> streamed.add(t));

    assertThat(r.generation().outputIds()).containsExactly(plain);
    assertThat(streamed)
        .containsExactly(java.util.Arrays.stream(plain).boxed().toArray(Integer[]::new));
    SpeculationStats s = r.stats();
    assertThat(s.draftTokens()).isPositive();
    assertThat(s.verifySteps()).isLessThanOrEqualTo(plain.length - 1);
    // Every verify step yields its accepted drafts plus one token: the output adds up.
    assertThat(s.verifySteps() + s.acceptedTokens()).isEqualTo(plain.length - 1);
    if (draft.endsWith("_bf16") || draft.endsWith("_f16")) {
      // A lower-precision copy of the target agrees with it almost everywhere.
      assertThat(s.acceptRate()).isGreaterThan(0.5);
    }
    if (draft.endsWith("/draft")) {
      // The trained draft is right often and wrong sometimes: accept and rollback both ran.
      assertThat(s.acceptedTokens()).isPositive().isLessThan(s.draftTokens());
    }
  }

  @ParameterizedTest(name = "logit bias, {0}")
  @CsvSource({"NGRAM, 3", "STANDALONE, 3"})
  void greedyWithLogitBiasIsPlainGreedyWithLogitBias(String algorithm, int k) {
    CausalLm lm = MODELS.get("models/sotu-moe");
    int[] prompt = prompt("models/sotu-moe");
    SamplingParams greedy =
        new SamplingParams(0, 1, 0, 0, 32, true, List.of())
            .withLogitBias(Map.of(prompt[3], 4f, prompt[5], -2f));
    int[] plain = new Generator(lm).generate(prompt, greedy, new int[0], t -> true).outputIds();
    CausalLm draft = algorithm.equals("STANDALONE") ? MODELS.get("models/sotu-moe/draft") : null;
    SpeculativeResult r =
        new SpeculativeGenerator(
                lm, SpeculativeConfig.of(SpeculativeAlgorithm.parse(algorithm), k), draft)
            .generate(prompt, greedy, new int[0], t -> true);
    assertThat(r.generation().outputIds()).containsExactly(plain);
  }
}
