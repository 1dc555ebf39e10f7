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
