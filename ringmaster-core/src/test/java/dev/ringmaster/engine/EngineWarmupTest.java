package dev.ringmaster.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringmaster.backend.cpu.model.CausalLm;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.testing.GoldenFixture;
import dev.ringmaster.testing.RepoPaths;
import org.junit.jupiter.api.Test;

/** The warm-up at load: what it runs, and that it leaves the model's results unchanged. */
class EngineWarmupTest {
  @Test
  void warmUpChangesNoLogitAndFitsTheContext() {
    GoldenFixture fixture =
        GoldenFixture.load(RepoPaths.require("fixtures/golden/deepseek_v3_basic"));
    try (CausalLm lm = CausalLm.load(fixture.dir())) {
      float[] cold = logits(lm, fixture.promptIds());
      int context = lm.config().maxPositionEmbeddings();

      EngineWarmup.Summary s = EngineWarmup.run(lm, 1_000_000);

      assertThat(s.prefillTokens())
          .isEqualTo(Math.max(1, Math.min(EngineWarmup.PREFILL_TOKENS, context / 2)));
      assertThat(s.prefillTokens() + s.decodeSteps()).isEqualTo(context);
      assertThat(s.describe()).contains("--cpu-warmup-steps 0");
      assertThat(logits(lm, fixture.promptIds())).isEqualTo(cold);
    }
  }

  @Test
  void batchedWarmUpRunsEveryRowAndChangesNoLogit() {
    GoldenFixture fixture =
        GoldenFixture.load(RepoPaths.require("fixtures/golden/deepseek_v3_basic"));
    try (CausalLm lm = CausalLm.load(fixture.dir())) {
      float[] cold = logits(lm, fixture.promptIds());
      int context = lm.config().maxPositionEmbeddings();
      int rowPrompt = Math.max(1, Math.min(EngineWarmup.BATCH_PROMPT_TOKENS, context / 2));

      EngineWarmup.Summary s = EngineWarmup.run(lm, 4, 3);

      assertThat(s.batchRows()).isEqualTo(3);
      assertThat(s.batchDecodeSteps()).isEqualTo(Math.min(4, context - rowPrompt));
      assertThat(s.describe()).contains("then 3 prompts prefilled together");
      assertThat(logits(lm, fixture.promptIds())).isEqualTo(cold);
      // One row is the one-sequence warm-up alone.
      EngineWarmup.Summary one = EngineWarmup.run(lm, 4, 1);
      assertThat(one.batchRows()).isZero();
      assertThat(one.describe()).doesNotContain("prompts prefilled together");
    }
  }

  @Test
  void settleRoundsRunUntilTheJitIsIdleOrTheTimeIsUpAndChangeNoLogit() {
    GoldenFixture fixture =
        GoldenFixture.load(RepoPaths.require("fixtures/golden/deepseek_v3_basic"));
    try (CausalLm lm = CausalLm.load(fixture.dir())) {
      float[] cold = logits(lm, fixture.promptIds());

      EngineWarmup.Summary s = EngineWarmup.run(lm, 4, 2, 2);

      assertThat(s.settleRounds()).isPositive();
      // Either the JIT went idle (a window of rounds is needed for that) or the 2 s ran out.
      if (s.settled()) {
        assertThat(s.settleRounds()).isGreaterThanOrEqualTo(JitSettling.MIN_WINDOW);
        assertThat(s.describe()).contains("(the JIT is idle)");
      } else {
        assertThat(s.settleMs()).isGreaterThanOrEqualTo(2000);
        assertThat(s.describe()).contains("stopped at --cpu-warmup-seconds");
      }
      assertThat(s.settleMs()).isLessThan(s.ms());
      assertThat(logits(lm, fixture.promptIds())).isEqualTo(cold);
      EngineWarmup.Summary none = EngineWarmup.run(lm, 4, 2, 0);
      assertThat(none.settleRounds()).isZero();
      assertThat(none.describe()).doesNotContain("settle rounds");
    }
  }

  @Test
  void verifyPassesRunWithSpeculationAndChangeNoLogit() {
    GoldenFixture fixture =
        GoldenFixture.load(RepoPaths.require("fixtures/golden/deepseek_v3_basic"));
    try (CausalLm lm = CausalLm.load(fixture.dir())) {
      float[] cold = logits(lm, fixture.promptIds());
      int context = lm.config().maxPositionEmbeddings();

      EngineWarmup.Summary s = EngineWarmup.run(lm, 4, 1, 0, 5);

      // The passes keep 1 to 5 tokens each, 3 on average: all of them fit in this context.
      int room = context - s.prefillTokens() - s.decodeSteps();
      assertThat(room).isGreaterThanOrEqualTo(5 + 3 * EngineWarmup.VERIFY_PASSES);
      assertThat(s.verifyTokens()).isEqualTo(5);
      assertThat(s.verifyPasses()).isEqualTo(EngineWarmup.VERIFY_PASSES);
      assertThat(s.describe()).contains(s.verifyPasses() + " verify passes of 5 tokens");
      assertThat(logits(lm, fixture.promptIds())).isEqualTo(cold);
      EngineWarmup.Summary plain = EngineWarmup.run(lm, 4, 1, 0, 0);
      assertThat(plain.verifyPasses()).isZero();
      assertThat(plain.describe()).doesNotContain("verify passes");
    }
  }

  @Test
  void negativeVerifyTokensAreRefusedByName() {
    assertThatThrownBy(() -> EngineWarmup.run(null, 4, 1, 0, -2))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("verify tokens")
        .hasMessageContaining("-2");
  }

  @Test
  void negativeSettleSecondsAreRefusedByName() {
    assertThatThrownBy(() -> EngineWarmup.run(null, 4, 1, -1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("settle seconds")
        .hasMessageContaining("-1");
  }

  @Test
  void batchRowsBelowOneAreRefusedByName() {
    assertThatThrownBy(() -> EngineWarmup.run(null, 4, 0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("batch rows")
        .hasMessageContaining("got 0");
  }

  @Test
  void negativeStepsAreRefusedByName() {
    assertThatThrownBy(() -> EngineWarmup.run(null, -1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("decode steps")
        .hasMessageContaining("-1");
  }

  private static float[] logits(CausalLm lm, int[] prompt) {
    KvCache cache = lm.newCache();
    try {
      return lm.forwardAll(prompt, cache);
    } finally {
      cache.close();
    }
  }
}
