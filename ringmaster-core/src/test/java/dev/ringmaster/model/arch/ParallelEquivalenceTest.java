package dev.ringmaster.model.arch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringmaster.backend.cpu.model.CausalLm;
import dev.ringmaster.backend.cpu.model.ParallelCausalLm;
import dev.ringmaster.model.config.ModelConfigParser;
import dev.ringmaster.parallel.AllReduceAlgorithm;
import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.testing.GoldenFixture;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Tensor and expert parallelism on in-process ranks reproduce the single-rank model: logits of a
 * prefill within 1e-4 at every position and the same greedy tokens, on every golden fixture whose
 * dimensions divide by the degree.
 */
class ParallelEquivalenceTest {
  static final int GREEDY_STEPS = 16;

  record Layout(String name, ParallelConfig config, AllReduceAlgorithm algorithm) {
    @Override
    public String toString() {
      return name;
    }
  }

  static List<Arguments> cases() {
    List<Layout> layouts = new ArrayList<>();
    AllReduceAlgorithm[] algos = {
      AllReduceAlgorithm.RING, AllReduceAlgorithm.ONESHOT, AllReduceAlgorithm.TWOSHOT
    };
    int i = 0;
    for (int n : new int[] {2, 4, 8}) {
      layouts.add(new Layout("tp" + n, ParallelConfig.tensor(n), algos[i++ % 3]));
      layouts.add(
          new Layout(
              "ep" + n + "-none",
              new ParallelConfig(n, n, ParallelConfig.MoeA2aBackend.NONE),
              algos[i++ % 3]));
      layouts.add(
          new Layout(
              "ep" + n + "-a2a",
              new ParallelConfig(n, n, ParallelConfig.MoeA2aBackend.ALL_TO_ALL),
              algos[i++ % 3]));
    }
    List<Arguments> out = new ArrayList<>();
    for (GoldenFixture f : GoldenFixture.all()) {
      var cfg = ModelConfigParser.parse(f.dir());
      for (Layout l : layouts) {
        if (divides(cfg, l.config())) {
          out.add(Arguments.of(f, l));
        }
      }
    }
    return out;
  }

  private static boolean divides(dev.ringmaster.model.config.ModelConfig cfg, ParallelConfig p) {
    try {
      ShardPlan.check(cfg, p);
      return true;
    } catch (IllegalArgumentException e) {
      return false;
    }
  }

  @ParameterizedTest(name = "{0} {1}")
  @MethodSource("cases")
  void parallelModelMatchesSingleRank(GoldenFixture f, Layout layout) {
    try (CausalLm single = CausalLm.load(f.dir());
        ParallelCausalLm par =
            ParallelCausalLm.load(f.dir(), layout.config(), layout.algorithm())) {
      int vocab = single.config().vocabSize();
      KvCache c1 = single.newCache();
      KvCache cp = par.newCache();
      float[] a = single.forwardAll(f.promptIds(), c1);
      float[] b = par.forwardAll(f.promptIds(), cp);
      float maxDiff = 0;
      for (int i = 0; i < a.length; i++) {
        maxDiff = Math.max(maxDiff, Math.abs(a[i] - b[i]));
      }
      assertThat(maxDiff).as("max |logit diff| vs one rank").isLessThanOrEqualTo(1e-4f);
      int last = (f.promptIds().length - 1) * vocab;
      int t1 = GoldenFixtureTest.argmax(a, last, vocab);
      int tp = GoldenFixtureTest.argmax(b, last, vocab);
      List<Integer> seq1 = new ArrayList<>();
      List<Integer> seqP = new ArrayList<>();
      for (int step = 0; step < GREEDY_STEPS; step++) {
        seq1.add(t1);
        seqP.add(tp);
        a = single.forwardAll(new int[] {t1}, c1);
        b = par.forwardAll(new int[] {tp}, cp);
        t1 = GoldenFixtureTest.argmax(a, 0, vocab);
        tp = GoldenFixtureTest.argmax(b, 0, vocab);
      }
      assertThat(seqP).as("greedy tokens").isEqualTo(seq1);
      assertThat(seq1.subList(0, Math.min(GREEDY_STEPS, f.greedyIds().length)))
          .as("and both equal transformers'")
          .containsExactly(
              java.util.Arrays.stream(f.greedyIds())
                  .limit(GREEDY_STEPS)
                  .boxed()
                  .toArray(Integer[]::new));
    }
  }

  @Test
  void batchOfSeveralSequencesMatchesSingleRankWithTensorParallelism() {
    GoldenFixture f = GoldenFixture.load(GoldenFixture.all().getFirst().dir());
    try (CausalLm single = CausalLm.load(f.dir());
        ParallelCausalLm par =
            ParallelCausalLm.load(f.dir(), ParallelConfig.tensor(2), AllReduceAlgorithm.RING)) {
      int[] p = f.promptIds();
      int[] tokens = new int[p.length * 2];
      System.arraycopy(p, 0, tokens, 0, p.length);
      for (int i = 0; i < p.length; i++) {
        tokens[p.length + i] = p[p.length - 1 - i];
      }
      int[] pos = new int[tokens.length];
      for (int i = 0; i < tokens.length; i++) {
        pos[i] = i % p.length;
      }
      BatchLayout layout = new BatchLayout(new int[] {0, p.length, 2 * p.length}, pos);
      int[] rows = {p.length - 1, 2 * p.length - 1};
      float[] a =
          single.forward(
              tokens, layout, new KvCache[] {single.newCache(), single.newCache()}, rows);
      float[] b = par.forward(tokens, layout, new KvCache[] {par.newCache(), par.newCache()}, rows);
      for (int i = 0; i < a.length; i++) {
        assertThat(b[i]).isCloseTo(a[i], org.assertj.core.data.Offset.offset(1e-4f));
      }
    }
  }

  @Test
  void aNonContiguousExpertPlacementGivesTheSameTokens() {
    GoldenFixture f =
        GoldenFixture.all().stream()
            .filter(x -> x.name().equals("deepseek_v3_basic"))
            .findFirst()
            .get();
    var cfg = ModelConfigParser.parse(f.dir());
    int e = cfg.moe().numExperts();
    int[] owner = new int[e];
    for (int i = 0; i < e; i++) {
      owner[i] = (i * 7 + 3) % 2; // interleaved, not contiguous ranges
    }
    for (var backend : ParallelConfig.MoeA2aBackend.values()) {
      ParallelConfig p = new ParallelConfig(2, 2, backend, ExpertPlacement.of(owner, 2));
      try (CausalLm single = CausalLm.load(f.dir());
          ParallelCausalLm par = ParallelCausalLm.load(f.dir(), p, AllReduceAlgorithm.RING)) {
        float[] a = single.forwardAll(f.promptIds(), single.newCache());
        float[] b = par.forwardAll(f.promptIds(), par.newCache());
        for (int i = 0; i < a.length; i++) {
          assertThat(b[i])
              .as("%s logit %d", backend, i)
              .isCloseTo(a[i], org.assertj.core.data.Offset.offset(1e-4f));
        }
      }
    }
  }

  @Test
  void placementTablesAreChecked() {
    assertThatThrownBy(() -> ExpertPlacement.of(new int[] {0, 0, 0, 0}, 2))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("rank 1 owns no expert");
    assertThatThrownBy(() -> ExpertPlacement.of(new int[] {0, 2}, 2))
        .hasMessageContaining("expert 1 is placed on rank 2 of 2");
  }

  @Test
  void indivisibleDimensionsAreNamed() {
    GoldenFixture f =
        GoldenFixture.all().stream()
            .filter(x -> x.name().equals("qwen3_moe_basic"))
            .findFirst()
            .get();
    assertThatThrownBy(
            () -> CausalLm.load(f.dir(), new RankContext(0, ParallelConfig.tensor(3), null)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("num_attention_heads")
        .hasMessageContaining("is not divisible by --tp-size 3");
  }
}
