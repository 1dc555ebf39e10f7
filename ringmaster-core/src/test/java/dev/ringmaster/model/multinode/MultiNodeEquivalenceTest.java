package dev.ringmaster.model.multinode;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.backend.cpu.model.CausalLm;
import dev.ringmaster.engine.Generator;
import dev.ringmaster.engine.SamplingParams;
import dev.ringmaster.engine.batch.BatchConfig;
import dev.ringmaster.engine.batch.BatchEngine;
import dev.ringmaster.engine.batch.EngineRequest;
import dev.ringmaster.engine.batch.FinishReason;
import dev.ringmaster.engine.batch.RequestOutcome;
import dev.ringmaster.engine.batch.TokenEvent;
import dev.ringmaster.engine.batch.TokenListener;
import dev.ringmaster.model.arch.ParallelConfig;
import dev.ringmaster.parallel.AllReduceAlgorithm;
import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.testing.GoldenFixture;
import dev.ringmaster.testing.RepoPaths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A model spread over two and four nodes (threads of this JVM talking over real loopback sockets: a
 * control connection each, TCP collectives between all ranks) reproduces the single-rank model:
 * prefill logits within 1e-4, the same greedy tokens as one rank and as transformers, and the
 * engine's continuous batching (caches created, rolled back and freed on node 0) gives every
 * request its solo tokens.
 */
class MultiNodeEquivalenceTest {
  static final int GREEDY_STEPS = 16;

  static GoldenFixture fixture() {
    return GoldenFixture.load(RepoPaths.require("fixtures/golden/deepseek_v3_basic"));
  }

  static Stream<Arguments> layouts() {
    return Stream.of(
        Arguments.of(ParallelConfig.tensor(2), 2, AllReduceAlgorithm.RING),
        Arguments.of(ParallelConfig.tensor(4), 2, AllReduceAlgorithm.AUTO),
        Arguments.of(ParallelConfig.tensor(4), 4, AllReduceAlgorithm.TWOSHOT),
        Arguments.of(
            new ParallelConfig(4, 4, ParallelConfig.MoeA2aBackend.ALL_TO_ALL),
            2,
            AllReduceAlgorithm.ONESHOT));
  }

  @ParameterizedTest(name = "{0} over {1} nodes, {2}")
  @MethodSource("layouts")
  void nodesReproduceTheSingleRankModel(ParallelConfig p, int nnodes, AllReduceAlgorithm a)
      throws Exception {
    GoldenFixture f = fixture();
    try (CausalLm single = CausalLm.load(f.dir());
        TestNodes nodes = TestNodes.cpu(f.dir(), p, a, nnodes)) {
      DistributedLm lm = nodes.lm;
      int vocab = single.config().vocabSize();
      KvCache c1 = single.newCache();
      KvCache cp = lm.newCache();
      float[] x = single.forwardAll(f.promptIds(), c1);
      float[] y = lm.forwardAll(f.promptIds(), cp);
      float maxDiff = 0;
      for (int i = 0; i < x.length; i++) {
        maxDiff = Math.max(maxDiff, Math.abs(x[i] - y[i]));
      }
      assertThat(maxDiff).as("max |logit diff| vs one rank").isLessThanOrEqualTo(1e-4f);
      int last = (f.promptIds().length - 1) * vocab;
      int t1 = argmax(x, last, vocab);
      int tp = argmax(y, last, vocab);
      List<Integer> seq1 = new ArrayList<>();
      List<Integer> seqP = new ArrayList<>();
      for (int step = 0; step < GREEDY_STEPS; step++) {
        seq1.add(t1);
        seqP.add(tp);
        x = single.forwardAll(new int[] {t1}, c1);
        t1 = argmax(x, 0, vocab);
        // Alternate the two entry points: forwardGreedy takes its own path on every node.
        tp =
            step % 2 == 0
                ? argmax(lm.forwardAll(new int[] {tp}, cp), 0, vocab)
                : lm.forwardGreedy(
                        new int[] {tp},
                        BatchLayout.single(1, cp.length()),
                        new KvCache[] {cp},
                        new int[] {0})[0];
      }
      assertThat(seqP).as("greedy tokens over %d nodes", nnodes).isEqualTo(seq1);
      assertThat(seq1.subList(0, Math.min(GREEDY_STEPS, f.greedyIds().length)))
          .as("and both equal transformers'")
          .containsExactly(
              Arrays.stream(f.greedyIds()).limit(GREEDY_STEPS).boxed().toArray(Integer[]::new));
      cp.close();
      assertThat(nodes.finish()).as("every other node exits cleanly").containsOnly(0);
    }
  }

  @Test
  void rolledBackAndFreedCachesStayInStepOnEveryNode() throws Exception {
    GoldenFixture f = fixture();
    int[] p = f.promptIds();
    try (CausalLm single = CausalLm.load(f.dir());
        TestNodes nodes =
            TestNodes.cpu(f.dir(), ParallelConfig.tensor(2), AllReduceAlgorithm.RING, 2)) {
      DistributedLm lm = nodes.lm;
      // Two sequences in one batch.
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
      KvCache[] s1 = {single.newCache(), single.newCache()};
      KvCache[] sp = {lm.newCache(), lm.newCache()};
      assertClose(lm.forward(tokens, layout, sp, rows), single.forward(tokens, layout, s1, rows));
      // Roll the second sequence back by three tokens on node 0 only (as the engine does after a
      // failed step): the other node must follow before the next step.
      for (KvCache[] c : List.of(s1, sp)) {
        c[1].setLength(p.length - 3);
      }
      int[] again = Arrays.copyOfRange(tokens, 2 * p.length - 3, 2 * p.length);
      BatchLayout tail =
          new BatchLayout(
              new int[] {0, 0, 3}, new int[] {p.length - 3, p.length - 2, p.length - 1});
      KvCache[] onlySecond1 = {s1[0], s1[1]};
      KvCache[] onlySecondP = {sp[0], sp[1]};
      assertClose(
          lm.forward(again, tail, onlySecondP, new int[] {2}),
          single.forward(again, tail, onlySecond1, new int[] {2}));
      // Free the first sequence's cache and start a fresh one: the other node drops and creates
      // its mirror with the next step.
      sp[0].close();
      KvCache fresh1 = single.newCache();
      KvCache freshP = lm.newCache();
      assertClose(lm.forwardAll(p, freshP), single.forwardAll(p, fresh1));
      assertThat(nodes.finish()).containsOnly(0);
    }
  }

  @Test
  void theBatchEngineOverTwoNodesGivesEveryRequestItsSoloTokens() throws Exception {
    GoldenFixture f = fixture();
    SplittableRandom r = new SplittableRandom(3);
    List<int[]> prompts = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      int[] prompt = new int[5 + r.nextInt(20)];
      for (int j = 0; j < prompt.length; j++) {
        prompt[j] = 2 + r.nextInt(318);
      }
      prompts.add(prompt);
    }
    SamplingParams greedy = new SamplingParams(0, 1, 0, 0, 10, true, List.of());
    int[] eos = {1};
    List<int[]> solo = new ArrayList<>();
    try (CausalLm single = CausalLm.load(f.dir())) {
      for (int[] prompt : prompts) {
        solo.add(new Generator(single).generate(prompt, greedy, eos, t -> true).outputIds());
      }
    }
    try (TestNodes nodes =
        TestNodes.cpu(f.dir(), ParallelConfig.tensor(2), AllReduceAlgorithm.AUTO, 2)) {
      // Small chunks and a tight pool: prompts split across steps, and preemption frees caches.
      BatchConfig tight = new BatchConfig(8, 64, 7, 4, 24).withRadixCache(false);
      try (BatchEngine engine = BatchEngine.start(nodes.lm, tight)) {
        List<CompletableFuture<RequestOutcome>> done = new ArrayList<>();
        List<List<Integer>> got = new ArrayList<>();
        for (int[] prompt : prompts) {
          CompletableFuture<RequestOutcome> d = new CompletableFuture<>();
          List<Integer> ids = java.util.Collections.synchronizedList(new ArrayList<>());
          done.add(d);
          got.add(ids);
          engine.submit(
              new EngineRequest(
                  null,
                  prompt,
                  greedy,
                  eos,
                  -1,
                  new TokenListener() {
                    @Override
                    public boolean onToken(TokenEvent event) {
                      ids.add(event.token());
                      return true;
                    }

                    @Override
                    public void onFinish(RequestOutcome outcome) {
                      d.complete(outcome);
                    }
                  }));
        }
        for (int i = 0; i < prompts.size(); i++) {
          assertThat(done.get(i).get(60, TimeUnit.SECONDS).reason()).isEqualTo(FinishReason.LENGTH);
          assertThat(got.get(i))
              .as("request %d", i)
              .containsExactly(Arrays.stream(solo.get(i)).boxed().toArray(Integer[]::new));
        }
      }
      assertThat(nodes.finish()).containsOnly(0);
    }
  }

  /**
   * The prefix cache across nodes: requests in groups sharing a prefix, in two waves (the second
   * finds the first's pages cached), greedy and sampled with fixed seeds, with a pool that keeps
   * everything and one tight enough to evict and preempt. Every request gets the tokens it gets
   * without the cache, the cache is hit, and once the tree is flushed no node holds a cache or a
   * page.
   */
  @Test
  void thePrefixCacheOverTwoNodesKeepsOutputsAndLeaksNoPage() throws Exception {
    GoldenFixture f = fixture();
    SplittableRandom r = new SplittableRandom(24);
    List<int[]> prompts = new ArrayList<>();
    for (int g = 0; g < 3; g++) {
      int[] prefix = new int[9 + 4 * g];
      for (int i = 0; i < prefix.length; i++) {
        prefix[i] = 2 + r.nextInt(318);
      }
      for (int q = 0; q < 3; q++) {
        int[] prompt = Arrays.copyOf(prefix, prefix.length + 1 + r.nextInt(5));
        for (int i = prefix.length; i < prompt.length; i++) {
          prompt[i] = 2 + r.nextInt(318);
        }
        prompts.add(prompt);
      }
    }
    try (TestNodes nodes =
        TestNodes.cpu(f.dir(), ParallelConfig.tensor(2), AllReduceAlgorithm.AUTO, 2)) {
      for (boolean sampled : new boolean[] {false, true}) {
        Waves off = waves(nodes.lm, prompts, sampled, new BatchConfig(8, 64, 7, 4, 4096), false);
        Waves on = waves(nodes.lm, prompts, sampled, new BatchConfig(8, 64, 7, 4, 4096), true);
        Waves tight = waves(nodes.lm, prompts, sampled, new BatchConfig(8, 64, 7, 4, 16), true);
        assertThat(off.cached()).isZero();
        assertThat(on.cached()).as("the cache was hit across nodes").isGreaterThan(0);
        assertThat(tight.cached()).as("and under eviction").isGreaterThan(0);
        assertThat(tight.preemptions()).as("the tight pool preempts").isGreaterThan(0);
        for (int i = 0; i < off.outputs().size(); i++) {
          assertThat(on.outputs().get(i))
              .as("request %d, sampled %s", i, sampled)
              .containsExactly(off.outputs().get(i));
          assertThat(tight.outputs().get(i))
              .as("request %d under eviction, sampled %s", i, sampled)
              .containsExactly(off.outputs().get(i));
        }
      }
      assertThat(nodes.finish()).containsOnly(0);
    }
  }

  /** What two waves of requests produced. */
  private record Waves(List<int[]> outputs, long cached, int preemptions) {}

  private static Waves waves(
      DistributedLm lm, List<int[]> prompts, boolean sampled, BatchConfig cfg, boolean radix)
      throws Exception {
    List<int[]> outputs = new ArrayList<>();
    long cached = 0;
    int preemptions = 0;
    try (BatchEngine engine = BatchEngine.start(lm, cfg.withRadixCache(radix))) {
      for (int wave = 0; wave < 2; wave++) {
        List<CompletableFuture<RequestOutcome>> done = new ArrayList<>();
        List<List<Integer>> got = new ArrayList<>();
        for (int i = 0; i < prompts.size(); i++) {
          SamplingParams p =
              sampled
                  ? new SamplingParams(0.9, 0.95, 0, 500 + i, 6, true, List.of())
                  : new SamplingParams(0, 1, 0, 0, 6, true, List.of());
          CompletableFuture<RequestOutcome> d = new CompletableFuture<>();
          List<Integer> ids = java.util.Collections.synchronizedList(new ArrayList<>());
          done.add(d);
          got.add(ids);
          engine.submit(
              new EngineRequest(null, prompts.get(i), p, new int[] {1}, -1, collect(ids, d)));
        }
        for (int i = 0; i < prompts.size(); i++) {
          RequestOutcome o = done.get(i).get(60, TimeUnit.SECONDS);
          assertThat(o.reason()).as("request %d", i).isEqualTo(FinishReason.LENGTH);
          cached += o.cachedTokens();
          preemptions += o.preemptions();
          outputs.add(got.get(i).stream().mapToInt(Integer::intValue).toArray());
        }
      }
      assertThat(engine.awaitIdle(java.time.Duration.ofSeconds(5))).isTrue();
      int pages = engine.stats().cachedPages();
      assertThat(engine.pool().used()).isEqualTo(pages);
      assertThat(engine.flushCache().get(5, TimeUnit.SECONDS)).isEqualTo(pages);
      assertThat(engine.pool().used()).isZero();
    }
    // Every request ended and the tree is empty: no node may hold a cache or a page.
    assertThat(lm.syncCaches())
        .as("caches and pages held on each node")
        .containsExactly(
            new DistributedLm.HeldCaches(0, 0, 0), new DistributedLm.HeldCaches(1, 0, 0));
    return new Waves(outputs.subList(prompts.size(), outputs.size()), cached, preemptions);
  }

  private static TokenListener collect(List<Integer> ids, CompletableFuture<RequestOutcome> d) {
    return new TokenListener() {
      @Override
      public boolean onToken(TokenEvent event) {
        ids.add(event.token());
        return true;
      }

      @Override
      public void onFinish(RequestOutcome outcome) {
        d.complete(outcome);
      }
    };
  }

  private static void assertClose(float[] got, float[] want) {
    assertThat(got).hasSameSizeAs(want);
    for (int i = 0; i < want.length; i++) {
      assertThat(got[i])
          .as("logit %d", i)
          .isCloseTo(want[i], org.assertj.core.data.Offset.offset(1e-4f));
    }
  }

  static int argmax(float[] x, int off, int n) {
    int best = 0;
    for (int i = 1; i < n; i++) {
      if (x[off + i] > x[off + best]) {
        best = i;
      }
    }
    return best;
  }
}
