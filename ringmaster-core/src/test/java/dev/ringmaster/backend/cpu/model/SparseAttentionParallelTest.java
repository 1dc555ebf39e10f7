package dev.ringmaster.backend.cpu.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringmaster.backend.cpu.CpuOps;
import dev.ringmaster.model.arch.ParallelConfig;
import dev.ringmaster.model.arch.ParallelConfig.MoeA2aBackend;
import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.parallel.AllReduceAlgorithm;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.testing.GoldenFixture;
import dev.ringmaster.testing.RepoPaths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Tensor and expert parallelism for DeepSeek Sparse Attention models (the {@code deepseek_v32} and
 * {@code glm_moe_dsa} fixtures, 32-token prompts against an {@code index_topk} of 8) on in-process
 * ranks: the prefill logits within 1e-4 of one rank's (the allreduce sums in another order), the
 * same greedy tokens over a cached decode, and an indexer that is replicated: every rank caches the
 * same indexer keys bit for bit (so every rank selects the same positions), and GLM-5's shared
 * layers cache none on any rank.
 */
class SparseAttentionParallelTest {
  private static final int GREEDY_STEPS = 16;
  private static final float LOGIT_TOLERANCE = 1e-4f;

  record Layout(String name, ParallelConfig config, AllReduceAlgorithm algorithm) {
    @Override
    public String toString() {
      return name;
    }
  }

  static List<Arguments> cases() {
    List<Layout> layouts =
        List.of(
            new Layout("tp2", ParallelConfig.tensor(2), AllReduceAlgorithm.RING),
            new Layout("tp4", ParallelConfig.tensor(4), AllReduceAlgorithm.ONESHOT),
            new Layout(
                "ep2", new ParallelConfig(2, 2, MoeA2aBackend.NONE), AllReduceAlgorithm.TWOSHOT),
            new Layout(
                "ep2-a2a",
                new ParallelConfig(2, 2, MoeA2aBackend.ALL_TO_ALL),
                AllReduceAlgorithm.RING),
            new Layout(
                "ep4", new ParallelConfig(4, 4, MoeA2aBackend.NONE), AllReduceAlgorithm.RING),
            new Layout(
                "ep4-a2a",
                new ParallelConfig(4, 4, MoeA2aBackend.ALL_TO_ALL),
                AllReduceAlgorithm.TWOSHOT));
    List<Arguments> out = new ArrayList<>();
    for (GoldenFixture f : SparseAttentionTest.dsaFixtures()) {
      for (Layout l : layouts) {
        out.add(Arguments.of(f, l));
      }
    }
    return out;
  }

  @ParameterizedTest(name = "{0} {1}")
  @MethodSource("cases")
  void parallelRanksMatchOneRankAndSelectTheSamePositions(GoldenFixture f, Layout layout) {
    try (CausalLm single = CausalLm.load(f.dir());
        ParallelCausalLm par =
            ParallelCausalLm.load(f.dir(), layout.config(), layout.algorithm())) {
      ModelConfig cfg = single.config();
      int vocab = cfg.vocabSize();
      int[] prompt = f.promptIds();
      assertThat(prompt.length).isGreaterThan(cfg.sparseAttention().topK());
      assertThat(par.localRanks()).isEqualTo(layout.config().tpSize());
      KvCache c1 = single.newCache();
      KvCache cp = par.newCache();
      float[] a = single.forwardAll(prompt, c1);
      float[] b = par.forwardAll(prompt, cp);
      assertThat(maxDiff(a, b))
          .as("max |logit diff| vs one rank")
          .isLessThanOrEqualTo(LOGIT_TOLERANCE);
      int last = (prompt.length - 1) * vocab;
      int t1 = CpuOps.argmax(a, last, vocab);
      int tp = CpuOps.argmax(b, last, vocab);
      List<Integer> seq1 = new ArrayList<>();
      List<Integer> seqP = new ArrayList<>();
      for (int step = 0; step < GREEDY_STEPS; step++) {
        seq1.add(t1);
        seqP.add(tp);
        a = single.forwardAll(new int[] {t1}, c1);
        b = par.forwardAll(new int[] {tp}, cp);
        assertThat(maxDiff(a, b)).as("decode step %d", step).isLessThanOrEqualTo(LOGIT_TOLERANCE);
        t1 = CpuOps.argmax(a, 0, vocab);
        tp = CpuOps.argmax(b, 0, vocab);
      }
      assertThat(seqP).as("greedy tokens").isEqualTo(seq1);
      assertThat(seq1)
          .as("and both equal transformers'")
          .containsExactly(
              Arrays.stream(f.greedyIds()).limit(GREEDY_STEPS).boxed().toArray(Integer[]::new));
      assertReplicatedIndexerKeys(cfg, c1, cp, par.localRanks());
    }
  }

  /**
   * Every rank's indexer keys equal rank 0's bit for bit and one rank's within the tolerance;
   * layers that share a selection cache none on any rank.
   */
  private static void assertReplicatedIndexerKeys(
      ModelConfig cfg, KvCache single, KvCache sharded, int ranks) {
    int n = single.length();
    assertThat(sharded.length()).isEqualTo(n);
    for (int l = 0; l < cfg.numLayers(); l++) {
      int layer = l;
      if (!cfg.sparseAttention().hasIndexer(l)) {
        for (int r = 0; r < ranks; r++) {
          KvCache shard = sharded.shard(r);
          assertThatThrownBy(() -> shard.c(layer))
              .as("shared layer %d on rank %d", l, r)
              .hasMessageContaining("has no indexer key cache");
        }
        continue;
      }
      int w = single.widthC();
      float[] rank0 = Arrays.copyOf(sharded.shard(0).c(l), n * w);
      assertThat(maxDiff(Arrays.copyOf(single.c(l), n * w), rank0))
          .as("layer %d indexer keys vs one rank", l)
          .isLessThanOrEqualTo(LOGIT_TOLERANCE);
      for (int r = 1; r < ranks; r++) {
        assertThat(Arrays.copyOf(sharded.shard(r).c(l), n * w))
            .as("layer %d indexer keys on rank %d", l, r)
            .containsExactly(rank0);
      }
    }
  }

  private static float maxDiff(float[] a, float[] b) {
    assertThat(b).hasSameSizeAs(a);
    float d = 0;
    for (int i = 0; i < a.length; i++) {
      d = Math.max(d, Math.abs(a[i] - b[i]));
    }
    return d;
  }

  /**
   * The KV figure of a parallel model counts every rank's copy of the latent and indexer caches:
   * {@code deepseek_v32_dsa} has 2 layers of latent 16 + rotary key 8 and 2 indexed layers of 16
   * keys, 80 f32 values (320 bytes) per token per rank; {@code glm_moe_dsa_shared} has 3 layers of
   * 24 and 2 indexed layers of 16 (its middle layer shares), 104 values (416 bytes).
   */
  @Test
  void kvBytesPerTokenCountsTheIndexerCacheOnEveryRank() {
    long[][] expected = {{320, 640, 1280}, {416, 832, 1664}};
    String[] names = {"deepseek_v32_dsa", "glm_moe_dsa_shared"};
    for (int i = 0; i < names.length; i++) {
      var dir = RepoPaths.require("fixtures/golden/" + names[i]);
      try (CausalLm one = CausalLm.load(dir)) {
        assertThat(one.kvBytesPerToken()).as(names[i]).isEqualTo(expected[i][0]);
        assertThat(KvCache.bytesPerToken(one.config())).isEqualTo(expected[i][0]);
      }
      int[] degrees = {2, 4};
      for (int d = 0; d < degrees.length; d++) {
        try (ParallelCausalLm par =
            ParallelCausalLm.load(
                dir, ParallelConfig.tensor(degrees[d]), AllReduceAlgorithm.RING)) {
          assertThat(par.kvBytesPerToken())
              .as("%s tp%d", names[i], degrees[d])
              .isEqualTo(expected[i][d + 1]);
        }
      }
    }
  }

  /** GQA ranks cache only their share of the KV heads: the shares add up to one model's. */
  @Test
  void gqaRanksShareTheKvHeads() {
    var dir = RepoPaths.require("fixtures/golden/qwen3_moe_basic");
    try (CausalLm one = CausalLm.load(dir);
        ParallelCausalLm par =
            ParallelCausalLm.load(dir, ParallelConfig.tensor(2), AllReduceAlgorithm.RING)) {
      assertThat(par.kvBytesPerToken()).isEqualTo(one.kvBytesPerToken());
      assertThat(one.kvBytesPerToken()).isEqualTo(KvCache.bytesPerToken(one.config()));
    }
  }
}
