package dev.ringmaster.engine.spec;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.backend.cpu.model.CausalLm;
import dev.ringmaster.engine.SamplingParams;
import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.testing.GoldenFixture;
import dev.ringmaster.testing.RepoPaths;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * After a rejection the caches hold what a run that never saw the rejected tokens holds: the
 * target's cache after a verify pass of 4 drafts rolled back to 1 accepted, and the draft model's
 * cache after a proposal the context then diverged from.
 */
class KvRollbackTest {
  /** Cache rows written by a pass of a different token count may differ in the last bits. */
  private static final float TOLERANCE = 1e-5f;

  private static void assertSameContents(KvCache actual, KvCache expected, int layers) {
    assertThat(actual.length()).isEqualTo(expected.length());
    int n = expected.length();
    for (int l = 0; l < layers; l++) {
      assertClose(actual.a(l), expected.a(l), n * expected.widthA(), "layer " + l + " first");
      assertClose(actual.b(l), expected.b(l), n * expected.widthB(), "layer " + l + " second");
    }
  }

  private static void assertClose(float[] actual, float[] expected, int n, String what) {
    for (int i = 0; i < n; i++) {
      assertThat(Math.abs(actual[i] - expected[i]))
          .as("%s array at %d: %s vs %s", what, i, actual[i], expected[i])
          .isLessThanOrEqualTo(TOLERANCE);
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"fixtures/golden/deepseek_v3_basic", "fixtures/golden/qwen3_moe_basic"})
  void targetCacheAfterARejectionEqualsARunWithoutTheRejectedTokens(String fixture) {
    GoldenFixture f = GoldenFixture.load(RepoPaths.require(fixture));
    try (CausalLm lm = CausalLm.load(f.dir())) {
      int[] prompt = f.promptIds();
      int layers = lm.config().numLayers();
      int last = 17;
      int[] drafts = {40, 41, 42, 43};
      int correction = 99;

      KvCache spec = lm.newCache();
      lm.forwardAll(prompt, spec);
      int start = spec.length();
      int[] verify = {last, drafts[0], drafts[1], drafts[2], drafts[3]};
      lm.forward(
          verify, BatchLayout.single(5, start), new KvCache[] {spec}, new int[] {0, 1, 2, 3, 4});
      spec.setLength(start + 2); // last token and one accepted draft
      float[] specNext = lm.forwardAll(new int[] {correction}, spec);

      KvCache plain = lm.newCache();
      lm.forwardAll(prompt, plain);
      lm.forwardAll(new int[] {last, drafts[0]}, plain);
      float[] plainNext = lm.forwardAll(new int[] {correction}, plain);

      assertSameContents(spec, plain, layers);
      assertClose(specNext, plainNext, plainNext.length, "next logits");
    }
  }

  @ParameterizedTest
  @ValueSource(ints = {0, 2})
  void draftCacheRollsBackToTheContextItStillShares(int acceptedBeforeDivergence) {
    try (CausalLm draft = CausalLm.load(RepoPaths.require("fixtures/golden/deepseek_v3_basic"))) {
      int[] prompt =
          GoldenFixture.load(RepoPaths.require("fixtures/golden/deepseek_v3_basic")).promptIds();
      RowDistribution greedy =
          RowDistribution.of(SamplingParams.greedy(8), draft.config().vocabSize());
      int k = 4;
      try (ModelDrafter speculating = new ModelDrafter(draft, greedy);
          ModelDrafter fresh = new ModelDrafter(draft, greedy)) {
        Draft first = speculating.propose(prompt, prompt.length, k);
        // The target keeps some drafts, then puts a token of its own that the draft did not pick.
        int[] context = Arrays.copyOf(prompt, prompt.length + acceptedBeforeDivergence + 1);
        System.arraycopy(first.tokens(), 0, context, prompt.length, acceptedBeforeDivergence);
        int own = (first.tokens()[acceptedBeforeDivergence] + 1) % draft.config().vocabSize();
        context[context.length - 1] = own;

        Draft next = speculating.propose(context, context.length, k);
        Draft expected = fresh.propose(context, context.length, k);
        assertThat(next.tokens()).containsExactly(expected.tokens());
        assertSameContents(speculating.cache(), fresh.cache(), draft.config().numLayers());
        assertThat(List.of(speculating.cache().length())).containsExactly(context.length + k - 1);
      }
    }
  }
}
