package dev.ringmaster.engine.spec;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringmaster.backend.cpu.model.CausalLm;
import dev.ringmaster.engine.SamplingParams;
import dev.ringmaster.model.tokenizer.Tokenizer;
import dev.ringmaster.testing.RepoPaths;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Sampled speculation on the embedded model and its draft: reproducible per seed, drafts partly
 * accepted, and what it refuses.
 */
class SpeculativeSamplingTest {
  private static CausalLm target;
  private static CausalLm draft;
  private static int[] prompt;

  @BeforeAll
  static void load() {
    target = CausalLm.load(RepoPaths.require("models/sotu-moe"));
    draft = CausalLm.load(RepoPaths.require("models/sotu-moe/draft"));
    prompt =
        Tokenizer.load(RepoPaths.require("models/sotu-moe"))
            .encode("The state of our Union is strong, and the Congress");
  }

  @AfterAll
  static void close() {
    target.close();
    draft.close();
  }

  private static SpeculativeResult run(SpeculativeAlgorithm algorithm, long seed) {
    SamplingParams p = new SamplingParams(0.8, 0.95, 0, seed, 40, true, List.of());
    return new SpeculativeGenerator(
            target,
            SpeculativeConfig.of(algorithm, 3),
            algorithm == SpeculativeAlgorithm.STANDALONE ? draft : null)
        .generate(prompt, p, new int[0], t -> true);
  }

  @Test
  void theSameSeedGivesTheSameTokensAndAnotherSeedOthers() {
    // The embedded model has no MTP layer: NextnSpeculationTest covers NEXTN's seeds.
    for (SpeculativeAlgorithm a :
        List.of(SpeculativeAlgorithm.NGRAM, SpeculativeAlgorithm.STANDALONE)) {
      int[] first = run(a, 5).generation().outputIds();
      assertThat(first).hasSize(40);
      assertThat(run(a, 5).generation().outputIds()).containsExactly(first);
      assertThat(run(a, 6).generation().outputIds()).isNotEqualTo(first);
    }
  }

  @Test
  void sampledDraftsArePartlyAccepted() {
    SpeculationStats s = run(SpeculativeAlgorithm.STANDALONE, 1).stats();
    assertThat(s.acceptedTokens()).isPositive().isLessThan(s.draftTokens());
    assertThat(s.acceptLength()).isGreaterThan(1);
    assertThat(s.verifySteps() + s.acceptedTokens()).isEqualTo(39);
  }

  @Test
  void penaltiesAndMismatchedDraftsAreRefusedWithTheReason() {
    SamplingParams penalised =
        new SamplingParams(0.8, 1, 0, 0, 8, true, List.of()).withPenalties(1.1, 0, 0);
    SpeculativeGenerator g =
        new SpeculativeGenerator(target, SpeculativeConfig.of(SpeculativeAlgorithm.NGRAM, 2), null);
    assertThatThrownBy(() -> g.generate(prompt, penalised, new int[0], t -> true))
        .hasMessageContaining("penalties");
    try (CausalLm fixture = CausalLm.load(RepoPaths.require("fixtures/golden/deepseek_v3_basic"))) {
      assertThatThrownBy(
              () ->
                  new SpeculativeGenerator(
                      target, SpeculativeConfig.of(SpeculativeAlgorithm.STANDALONE, 2), fixture))
          .hasMessageContaining("vocabulary has 320 tokens but the target's has 6144");
    }
    assertThatThrownBy(
            () ->
                new SpeculativeGenerator(
                    target, SpeculativeConfig.of(SpeculativeAlgorithm.STANDALONE, 2), null))
        .hasMessageContaining("needs a draft model");
    assertThatThrownBy(() -> SpeculativeAlgorithm.parse("eagle9"))
        .hasMessageContaining("[NGRAM, STANDALONE, NEXTN, EAGLE3]");
  }
}
