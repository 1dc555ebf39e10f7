package dev.ringmaster.engine.batch;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.backend.cpu.model.CausalLm;
import dev.ringmaster.engine.Generator;
import dev.ringmaster.engine.SamplingParams;
import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.testing.ForwardingLanguageModel;
import dev.ringmaster.testing.GoldenFixture;
import dev.ringmaster.testing.RepoPaths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The overlap schedule: the next step is planned while the model runs the current one on its own
 * thread, and no token depends on it.
 */
class OverlapScheduleTest {
  private static CausalLm lm;

  @BeforeAll
  static void load() {
    lm =
        CausalLm.load(
            GoldenFixture.load(RepoPaths.require("fixtures/golden/deepseek_v3_basic")).dir());
  }

  @AfterAll
  static void close() {
    lm.close();
  }

  /** Records the threads that ran forwards. */
  private static final class ThreadRecording extends ForwardingLanguageModel {
    final Set<String> threads = ConcurrentHashMap.newKeySet();

    ThreadRecording() {
      super(lm);
    }

    @Override
    public int[] forwardGreedy(int[] tokens, BatchLayout layout, KvCache[] caches, int[] rows) {
      threads.add(Thread.currentThread().getName());
      return super.forwardGreedy(tokens, layout, caches, rows);
    }

    @Override
    public void close() {}
  }

  private record Job(int[] prompt, SamplingParams params, int[] eos) {}

  /**
   * Requests that end every way the plan-ahead must notice: by length, by an end-of-sequence token
   * (taken from each prompt's own solo greedy output, so it does occur), sampled with a seed, with
   * penalties and bias; prompts long enough to be split into chunks.
   */
  private static List<Job> jobs() {
    SplittableRandom r = new SplittableRandom(23);
    List<Job> out = new ArrayList<>();
    for (int i = 0; i < 24; i++) {
      int[] p = new int[1 + r.nextInt(40)];
      for (int k = 0; k < p.length; k++) {
        p[k] = 2 + r.nextInt(318);
      }
      int maxNew = 4 + r.nextInt(16);
      SamplingParams params =
          switch (i % 4) {
            case 0 -> SamplingParams.greedy(maxNew);
            case 1 -> new SamplingParams(0.8, 0.95, 0, 100 + i, maxNew, false, List.of());
            case 2 -> SamplingParams.greedy(maxNew).withPenalties(1.3, 0.4, 0.2);
            default ->
                new SamplingParams(1.0, 1, 20, 7 + i, maxNew, false, List.of())
                    .withLogitBias(Map.of(5, 2f));
          };
      int[] eos = {1};
      if (i % 3 == 0) {
        int[] solo = new Generator(lm).generate(p, params, new int[0], t -> true).outputIds();
        eos = new int[] {solo[Math.min(2, solo.length - 1)]};
      }
      out.add(new Job(p, params, eos));
    }
    return out;
  }

  private static List<int[]> run(BatchConfig config, List<Job> jobs) throws Exception {
    try (BatchEngine engine = BatchEngine.start(lm, config)) {
      List<Collector> cs = new ArrayList<>();
      for (Job j : jobs) {
        Collector c = new Collector();
        cs.add(c);
        engine.submit(new EngineRequest(null, j.prompt(), j.params(), j.eos(), -1, c));
      }
      List<int[]> out = new ArrayList<>();
      for (Collector c : cs) {
        assertThat(c.await().reason()).isIn(FinishReason.LENGTH, FinishReason.STOP);
        out.add(c.ids());
      }
      assertThat(engine.awaitIdle(Duration.ofSeconds(5))).isTrue();
      engine.flushCache().get(5, java.util.concurrent.TimeUnit.SECONDS);
      assertThat(engine.pool().used()).isZero();
      return out;
    }
  }

  @Test
  void tokensAreTheSameWithAndWithoutOverlap() throws Exception {
    List<Job> jobs = jobs();
    BatchConfig base = new BatchConfig(64, 256, 7, 4, 4096);
    List<int[]> plain = run(base.withOverlap(false), jobs);
    List<int[]> overlapped = run(base.withOverlap(true), jobs);
    for (int i = 0; i < jobs.size(); i++) {
      assertThat(overlapped.get(i)).as("request %d", i).containsExactly(plain.get(i));
    }
    // Stop tokens ended some requests early: both runs saw them.
    assertThat(plain.stream().filter(ids -> ids.length < 4).count()).isPositive();
  }

  @Test
  void theModelRunsOnItsOwnThreadAndMostStepsArePlannedAhead() throws Exception {
    ThreadRecording m = new ThreadRecording();
    try (BatchEngine engine = BatchEngine.start(m, new BatchConfig(64, 256, 64, 4, 4096))) {
      List<Collector> cs = new ArrayList<>();
      for (int i = 0; i < 6; i++) {
        Collector c = new Collector();
        cs.add(c);
        engine.submit(
            new EngineRequest(
                null, new int[] {3 + i, 4, 5}, SamplingParams.greedy(30), new int[0], -1, c));
      }
      for (Collector c : cs) {
        assertThat(c.await().reason()).isEqualTo(FinishReason.LENGTH);
      }
      StepTimes t = engine.stepTimes();
      assertThat(m.threads).containsExactly("ringmaster-model");
      assertThat(t.steps()).isEqualTo(engine.stats().steps());
      // Every step after the first prefill decodes all six together: planned ahead.
      assertThat(t.overlapped()).isGreaterThanOrEqualTo(t.steps() / 2);
      assertThat(t.forwardSeconds()).isPositive();
      assertThat(t.hostSeconds()).isPositive();
      assertThat(t.recentHostMillis()).isGreaterThanOrEqualTo(0);
      assertThat(t.recentHostShare()).isBetween(0.0, 1.0);
    }
  }

  @Test
  void withoutOverlapTheEngineThreadRunsTheModel() throws Exception {
    ThreadRecording m = new ThreadRecording();
    BatchConfig c = new BatchConfig(64, 256, 64, 4, 4096).withOverlap(false);
    try (BatchEngine engine = BatchEngine.start(m, c)) {
      Collector col = new Collector();
      engine.submit(
          new EngineRequest(
              null, new int[] {3, 4, 5}, SamplingParams.greedy(5), new int[0], -1, col));
      col.await();
      assertThat(m.threads).containsExactly("ringmaster-engine");
      assertThat(engine.stepTimes().overlapped()).isZero();
    }
  }

  /** A model that computes nothing: every row gets token 3; caches count their closing. */
  private static final class Hollow extends ForwardingLanguageModel {
    final java.util.concurrent.atomic.AtomicInteger opened =
        new java.util.concurrent.atomic.AtomicInteger();
    final java.util.concurrent.atomic.AtomicInteger closed =
        new java.util.concurrent.atomic.AtomicInteger();

    Hollow() {
      super(lm);
    }

    @Override
    public KvCache newCache(dev.ringmaster.runtime.KvBlockAllocator blocks) {
      opened.incrementAndGet();
      return KvCache.ofExternal(
          new KvCache.External() {
            private boolean done;

            @Override
            public void ensureCapacity(int tokens) {}

            @Override
            public void close() {
              if (!done) {
                done = true;
                closed.incrementAndGet();
              }
            }
          },
          blocks.newTable());
    }

    @Override
    public int[] forwardGreedy(int[] tokens, BatchLayout layout, KvCache[] caches, int[] rows) {
      for (int s = 0; s < caches.length; s++) {
        int end = layout.seqStart()[s + 1];
        caches[s].ensureCapacity(layout.positions()[end - 1] + 1);
        caches[s].setLength(layout.positions()[end - 1] + 1);
      }
      return new int[rows.length];
    }

    @Override
    public void close() {}
  }

  @Test
  void finishedAndPreemptedRequestsGiveTheirCachesBack() throws Exception {
    Hollow m = new Hollow();
    // 12 blocks of 4 positions for 6 requests of up to 20 positions: preemptions happen. The
    // hollow caches hold no pages to share, so the radix cache is off.
    BatchConfig cfg = new BatchConfig(64, 256, 64, 4, 12).withRadixCache(false);
    try (BatchEngine engine = BatchEngine.start(m, cfg)) {
      List<Collector> cs = new ArrayList<>();
      for (int i = 0; i < 6; i++) {
        Collector c = new Collector();
        cs.add(c);
        engine.submit(
            new EngineRequest(
                null, new int[] {3, 4, 5, 6}, SamplingParams.greedy(16), new int[0], -1, c));
      }
      for (Collector c : cs) {
        assertThat(c.await().reason()).isEqualTo(FinishReason.LENGTH);
      }
      assertThat(engine.awaitIdle(Duration.ofSeconds(5))).isTrue();
      assertThat(m.opened.get()).isGreaterThanOrEqualTo(6);
      assertThat(m.closed.get()).isEqualTo(m.opened.get());
    }
  }

  @Test
  void aStopRequestEndsTheRequestAsStopped() throws Exception {
    try (BatchEngine engine = BatchEngine.start(lm, new BatchConfig(64, 256, 64, 4, 4096))) {
      Collector c = new Collector();
      RequestHandle h =
          engine.submit(
              new EngineRequest(
                  null, new int[] {3, 4}, SamplingParams.greedy(200), new int[0], -1, c));
      while (c.ids().length < 3) {
        Thread.sleep(1);
      }
      h.stop();
      RequestOutcome o = c.await();
      assertThat(o.reason()).isEqualTo(FinishReason.STOP);
      assertThat(o.completionTokens()).isLessThan(200);
      assertThat(engine.awaitIdle(Duration.ofSeconds(5))).isTrue();
      engine.flushCache().get(5, java.util.concurrent.TimeUnit.SECONDS);
      assertThat(engine.pool().used()).isZero();
    }
  }
}
