package dev.ringmaster.engine.batch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringmaster.backend.cpu.model.CausalLm;
import dev.ringmaster.engine.Generator;
import dev.ringmaster.engine.SamplingParams;
import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.runtime.LanguageModel;
import dev.ringmaster.testing.ForwardingLanguageModel;
import dev.ringmaster.testing.GoldenFixture;
import dev.ringmaster.testing.RepoPaths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class BatchEngineTest {
  private static final int[] EOS = {1};
  private static CausalLm lm;
  private static GoldenFixture fixture;

  @BeforeAll
  static void load() {
    fixture = GoldenFixture.load(RepoPaths.require("fixtures/golden/deepseek_v3_basic"));
    lm = CausalLm.load(fixture.dir());
  }

  @AfterAll
  static void close() {
    lm.close();
  }

  private static BatchConfig config(int chunk, int blocks) {
    return new BatchConfig(64, 256, chunk, 4, blocks);
  }

  private static EngineRequest greedy(int[] prompt, int maxNew, TokenListener l) {
    SamplingParams p = new SamplingParams(0, 1, 0, 0, maxNew, true, List.of());
    return new EngineRequest(null, prompt, p, EOS, -1, l);
  }

  private static int[] solo(int[] prompt, int maxNew) {
    SamplingParams p = new SamplingParams(0, 1, 0, 0, maxNew, true, List.of());
    return new Generator(lm).generate(prompt, p, EOS, t -> true).outputIds();
  }

  /** The forward step of a {@link LanguageModel}, to wrap the test model. */
  @FunctionalInterface
  private interface Forward {
    float[] apply(int[] tokens, BatchLayout layout, KvCache[] caches, int[] rows);
  }

  /** The test model with its forward replaced (fault injection, gating). */
  private static LanguageModel withForward(Forward forward) {
    return new ForwardingLanguageModel(lm) {
      @Override
      public float[] forward(int[] tokens, BatchLayout layout, KvCache[] caches, int[] rows) {
        return forward.apply(tokens, layout, caches, rows);
      }

      @Override
      public void close() {} // the shared model stays open for the other tests
    };
  }

  private static int[] randomPrompt(SplittableRandom r, int len) {
    int[] p = new int[len];
    for (int i = 0; i < len; i++) {
      p[i] = 2 + r.nextInt(318);
    }
    return p;
  }

  @Test
  void singleRequestMatchesTheGoldenGreedyDecode() throws Exception {
    try (BatchEngine engine = BatchEngine.start(lm, config(512, 1024))) {
      Collector c = new Collector();
      engine.submit(greedy(fixture.promptIds(), fixture.greedyIds().length, c));
      RequestOutcome o = c.await();
      assertThat(o.reason()).isEqualTo(FinishReason.LENGTH);
      assertThat(c.ids()).containsExactly(fixture.greedyIds());
      assertThat(o.completionTokens()).isEqualTo(fixture.greedyIds().length);
      engine.flushCache().get(5, java.util.concurrent.TimeUnit.SECONDS);
      assertThat(engine.pool().used()).isZero();
    }
  }

  @Test
  void concurrentRequestsWithSmallChunksMatchTheirSoloDecodes() throws Exception {
    SplittableRandom r = new SplittableRandom(7);
    int n = 40;
    List<int[]> prompts = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      prompts.add(randomPrompt(r, 1 + r.nextInt(60)));
    }
    // Chunks of 5 tokens shared by everyone: prompts are split at batch-dependent boundaries.
    try (BatchEngine engine = BatchEngine.start(lm, config(5, 4096))) {
      List<Collector> cs = new ArrayList<>();
      for (int[] p : prompts) {
        Collector c = new Collector();
        cs.add(c);
        engine.submit(greedy(p, 12, c));
      }
      for (int i = 0; i < n; i++) {
        assertThat(cs.get(i).await().reason()).isEqualTo(FinishReason.LENGTH);
        assertThat(cs.get(i).ids()).as("request %d", i).containsExactly(solo(prompts.get(i), 12));
      }
      assertThat(engine.awaitIdle(java.time.Duration.ofSeconds(5))).isTrue();
      engine.flushCache().get(5, java.util.concurrent.TimeUnit.SECONDS);
      assertThat(engine.pool().used()).isZero();
      assertThat(engine.stats().queued()).isZero();
    }
  }

  @Test
  void preemptionUnderKvPressureStillCompletesEveryRequest() throws Exception {
    SplittableRandom r = new SplittableRandom(11);
    // 24 blocks of 4 positions: each request may need 30 + 20 positions, so only a couple fit.
    // The first forward waits until every request is queued: otherwise a slow submitting thread
    // can let requests run one after another and never contend for blocks.
    CountDownLatch allSubmitted = new CountDownLatch(1);
    LanguageModel gated =
        withForward(
            (tokens, layout, caches, rows) -> {
              try {
                allSubmitted.await();
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
              }
              return lm.forward(tokens, layout, caches, rows);
            });
    try (BatchEngine engine = BatchEngine.start(gated, config(512, 24))) {
      List<Collector> cs = new ArrayList<>();
      List<int[]> prompts = new ArrayList<>();
      for (int i = 0; i < 8; i++) {
        int[] p = randomPrompt(r, 30);
        prompts.add(p);
        Collector c = new Collector();
        cs.add(c);
        engine.submit(greedy(p, 20, c));
      }
      allSubmitted.countDown();
      for (int i = 0; i < cs.size(); i++) {
        RequestOutcome o = cs.get(i).await();
        assertThat(o.reason()).isEqualTo(FinishReason.LENGTH);
        assertThat(o.completionTokens()).isEqualTo(20);
        assertThat(cs.get(i).ids()).hasSize(20);
      }
      assertThat(engine.stats().preemptions()).isPositive();
      engine.flushCache().get(5, java.util.concurrent.TimeUnit.SECONDS);
      assertThat(engine.pool().used()).isZero();
    }
  }

  @Test
  void aFaultInTheForwardFailsOnlyTheAffectedRequest() throws Exception {
    int poison = 299;
    LanguageModel faulty =
        withForward(
            (tokens, layout, caches, rows) -> {
              if (Arrays.stream(tokens).anyMatch(t -> t == poison)) {
                throw new IllegalStateException("injected fault");
              }
              return lm.forward(tokens, layout, caches, rows);
            });
    try (BatchEngine engine = BatchEngine.start(faulty, config(512, 1024))) {
      Collector bad = new Collector();
      List<Collector> good = new ArrayList<>();
      int[] goodPrompt = {5, 6, 7, 8};
      for (int i = 0; i < 4; i++) {
        Collector c = new Collector();
        good.add(c);
        engine.submit(greedy(goodPrompt, 8, c));
      }
      engine.submit(greedy(new int[] {5, poison, 7}, 8, bad));
      RequestOutcome o = bad.await();
      assertThat(o.reason()).isEqualTo(FinishReason.ERROR);
      assertThat(o.error()).hasMessageContaining("injected fault");
      for (Collector c : good) {
        assertThat(c.await().reason()).isEqualTo(FinishReason.LENGTH);
        assertThat(c.ids()).containsExactly(solo(goodPrompt, 8));
      }
      engine.flushCache().get(5, java.util.concurrent.TimeUnit.SECONDS);
      assertThat(engine.pool().used()).isZero();
    }
  }

  @Test
  void listenerStopAndCancelAndThrowEndOnlyTheirRequest() throws Exception {
    try (BatchEngine engine = BatchEngine.start(lm, config(512, 1024))) {
      Collector stopper = new Collector(t -> false);
      Collector thrower =
          new Collector(
              t -> {
                throw new IllegalStateException("listener bug");
              });
      Collector slow = new Collector();
      engine.submit(greedy(new int[] {3, 4}, 50, stopper));
      engine.submit(greedy(new int[] {3, 4}, 50, thrower));
      RequestHandle h = engine.submit(greedy(new int[] {3, 4}, 200, slow));
      h.cancel();
      assertThat(stopper.await().reason()).isEqualTo(FinishReason.STOP);
      assertThat(stopper.ids()).hasSize(1);
      assertThat(thrower.await().reason()).isEqualTo(FinishReason.ERROR);
      assertThat(slow.await().reason()).isEqualTo(FinishReason.ABORT);
      assertThat(engine.awaitIdle(java.time.Duration.ofSeconds(5))).isTrue();
      engine.flushCache().get(5, java.util.concurrent.TimeUnit.SECONDS);
      assertThat(engine.pool().used()).isZero();
    }
  }

  @Test
  void rejectsWhatCanNeverRunAndAQueueBeyondItsBound() throws Exception {
    BatchConfig tight = new BatchConfig(1, 1, 512, 4, 1024);
    try (BatchEngine engine = BatchEngine.start(lm, tight)) {
      assertThatThrownBy(() -> engine.submit(greedy(new int[0], 4, new Collector())))
          .hasMessageContaining("empty");
      assertThatThrownBy(() -> engine.submit(greedy(new int[] {320}, 4, new Collector())))
          .hasMessageContaining("outside the vocabulary");
      assertThatThrownBy(() -> engine.submit(greedy(new int[] {3}, 256, new Collector())))
          .hasMessageContaining("exceeds");
      engine.stopAccepting();
      assertThatThrownBy(() -> engine.submit(greedy(new int[] {3}, 4, new Collector())))
          .isInstanceOfSatisfying(
              EngineRejectedException.class,
              e -> assertThat(e.reason()).isEqualTo(EngineRejectedException.Reason.SHUTTING_DOWN));
    }
    try (BatchEngine engine = BatchEngine.start(lm, tight)) {
      List<Collector> cs = new ArrayList<>();
      int accepted = 0;
      int refused = 0;
      for (int i = 0; i < 20; i++) {
        Collector c = new Collector();
        try {
          engine.submit(greedy(new int[] {3, 4}, 100, c));
          cs.add(c);
          accepted++;
        } catch (EngineRejectedException e) {
          assertThat(e.reason()).isEqualTo(EngineRejectedException.Reason.QUEUE_FULL);
          refused++;
        }
      }
      assertThat(refused).isPositive();
      assertThat(accepted).isGreaterThanOrEqualTo(1);
      for (Collector c : cs) {
        assertThat(c.await().reason()).isEqualTo(FinishReason.LENGTH);
      }
    }
  }

  @Test
  void logprobsAreNormalizedAndTopListIsSorted() throws Exception {
    try (BatchEngine engine = BatchEngine.start(lm, config(512, 1024))) {
      Collector c = new Collector();
      SamplingParams p = new SamplingParams(0, 1, 0, 0, 3, true, List.of());
      engine.submit(new EngineRequest("lp", new int[] {3, 4, 5}, p, EOS, 5, c));
      c.await();
      for (TokenEvent e : c.events) {
        assertThat(e.topIds()).hasSize(5);
        assertThat(e.topIds()[0]).isEqualTo(e.token()); // greedy picks the most likely
        assertThat(e.logprob()).isEqualTo(e.topLogprobs()[0]);
        for (int i = 1; i < 5; i++) {
          assertThat(e.topLogprobs()[i]).isLessThanOrEqualTo(e.topLogprobs()[i - 1]);
        }
        assertThat(e.logprob()).isLessThanOrEqualTo(0f);
      }
    }
  }

  @Test
  void logprobsOfTheChosenTokenOnly() throws Exception {
    try (BatchEngine engine = BatchEngine.start(lm, config(512, 1024))) {
      Collector c = new Collector();
      SamplingParams p = new SamplingParams(0, 1, 0, 0, 2, true, List.of());
      engine.submit(new EngineRequest("lp0", new int[] {3, 4}, p, EOS, 0, c));
      assertThat(c.await().reason()).isEqualTo(FinishReason.LENGTH);
      assertThat(c.events).allSatisfy(e -> assertThat(e.topIds()).isEmpty());
      assertThat(c.events).allSatisfy(e -> assertThat(e.logprob()).isLessThanOrEqualTo(0f));
    }
  }

  @Test
  void closeAbortsEverythingInFlight() throws Exception {
    BatchEngine engine = BatchEngine.start(lm, config(512, 1024));
    List<Collector> cs = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      Collector c = new Collector();
      cs.add(c);
      engine.submit(greedy(new int[] {3, 4}, 250, c));
    }
    engine.close();
    for (Collector c : cs) {
      assertThat(c.await().reason()).isIn(FinishReason.ABORT, FinishReason.LENGTH);
    }
    // A closed engine has given back every block, the prefix cache's included.
    assertThat(engine.pool().used()).isZero();
  }
}
