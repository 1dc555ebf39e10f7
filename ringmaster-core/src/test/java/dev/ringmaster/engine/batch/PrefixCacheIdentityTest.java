package dev.ringmaster.engine.batch;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.backend.cpu.model.CausalLm;
import dev.ringmaster.engine.SamplingParams;
import dev.ringmaster.testing.RepoPaths;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Outputs with the radix cache on equal outputs with it off: requests in groups sharing a long
 * prefix, sent in two concurrent waves (the second finds the first's pages cached), greedy and
 * sampled with fixed seeds, with a pool roomy enough to keep everything and one small enough to
 * force eviction and preemption.
 */
class PrefixCacheIdentityTest {
  private static final int PAGE = 4;
  private static final int GROUPS = 3;
  private static final int PER_GROUP = 4;
  private static final int PREFIX = 17;
  private static final int NEW_TOKENS = 6;

  /** What a workload produced. */
  private record Run(List<int[]> outputs, long cachedTokens, int preemptions) {}

  @ParameterizedTest
  @ValueSource(
      strings = {
        "fixtures/golden/deepseek_v3_basic",
        "fixtures/golden/qwen3_moe_basic",
        "fixtures/golden/deepseek_v32_dsa",
        "models/sotu-moe"
      })
  void outputsWithTheCacheEqualOutputsWithout(String model) throws Exception {
    try (CausalLm lm = CausalLm.load(RepoPaths.require(model))) {
      List<int[]> prompts = prompts(lm.config().vocabSize());
      for (boolean sampled : new boolean[] {false, true}) {
        Run off = run(lm, prompts, sampled, false, 4096);
        Run on = run(lm, prompts, sampled, true, 4096);
        assertThat(on.cachedTokens()).as("the cache was hit").isGreaterThan(0);
        assertThat(off.cachedTokens()).isZero();
        // 16 blocks hold about two requests: the tree is evicted and decodes preempt.
        Run tight = run(lm, prompts, sampled, true, 16);
        for (int i = 0; i < prompts.size(); i++) {
          assertThat(on.outputs().get(i))
              .as("%s request %d, sampled %s", model, i, sampled)
              .containsExactly(off.outputs().get(i));
          assertThat(tight.outputs().get(i))
              .as("%s request %d under eviction, sampled %s", model, i, sampled)
              .containsExactly(off.outputs().get(i));
        }
      }
    }
  }

  private static List<int[]> prompts(int vocab) {
    SplittableRandom r = new SplittableRandom(24);
    int range = Math.min(vocab - 2, 300);
    List<int[]> out = new ArrayList<>();
    for (int g = 0; g < GROUPS; g++) {
      int[] prefix = new int[PREFIX + g * PAGE];
      for (int i = 0; i < prefix.length; i++) {
        prefix[i] = 2 + r.nextInt(range);
      }
      for (int q = 0; q < PER_GROUP; q++) {
        int[] p = java.util.Arrays.copyOf(prefix, prefix.length + 1 + r.nextInt(6));
        for (int i = prefix.length; i < p.length; i++) {
          p[i] = 2 + r.nextInt(range);
        }
        out.add(p);
      }
    }
    return out;
  }

  /** Two waves of every prompt: all at once, then all at once again once the first is done. */
  private static Run run(
      CausalLm lm, List<int[]> prompts, boolean sampled, boolean radix, int blocks)
      throws Exception {
    BatchConfig cfg = new BatchConfig(64, 256, 16, PAGE, blocks).withRadixCache(radix);
    List<int[]> outputs = new ArrayList<>();
    long cached = 0;
    int preemptions = 0;
    try (BatchEngine engine = BatchEngine.start(lm, cfg)) {
      for (int wave = 0; wave < 2; wave++) {
        List<Collector> cs = new ArrayList<>();
        for (int i = 0; i < prompts.size(); i++) {
          SamplingParams p =
              sampled
                  ? new SamplingParams(0.9, 0.95, 0, 1000 + i, NEW_TOKENS, true, List.of())
                  : new SamplingParams(0, 1, 0, 0, NEW_TOKENS, true, List.of());
          Collector c = new Collector();
          cs.add(c);
          engine.submit(new EngineRequest(null, prompts.get(i), p, new int[] {1}, -1, c));
        }
        for (Collector c : cs) {
          RequestOutcome o = c.await();
          assertThat(o.reason()).isEqualTo(FinishReason.LENGTH);
          cached += o.cachedTokens();
          preemptions += o.preemptions();
          outputs.add(c.ids());
        }
      }
      assertThat(engine.awaitIdle(java.time.Duration.ofSeconds(5))).isTrue();
      int pages = engine.stats().cachedPages();
      assertThat(engine.pool().used()).isEqualTo(pages);
      assertThat(engine.flushCache().get(5, TimeUnit.SECONDS)).isEqualTo(pages);
      assertThat(engine.pool().used()).isZero();
      assertThat(engine.stats().cachedPages()).isZero();
    }
    return new Run(outputs.subList(prompts.size(), outputs.size()), cached, preemptions);
  }
}
