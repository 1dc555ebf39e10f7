package dev.ringmaster.engine.batch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringmaster.backend.cpu.model.CausalLm;
import dev.ringmaster.engine.Generator;
import dev.ringmaster.engine.SamplingParams;
import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.runtime.sampling.SampledTokens;
import dev.ringmaster.runtime.sampling.SamplingBatch;
import dev.ringmaster.testing.ForwardingLanguageModel;
import dev.ringmaster.testing.GoldenFixture;
import dev.ringmaster.testing.RepoPaths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The engine's sampling entry points: what each step calls and that batching changes no token. */
class BatchSamplingTest {
  private static final int[] EOS = {1};
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

  /** Counts the calls of each entry point. */
  private static final class Counting extends ForwardingLanguageModel {
    final AtomicInteger greedy = new AtomicInteger();
    final AtomicInteger sampled = new AtomicInteger();

    Counting() {
      super(lm);
    }

    @Override
    public int[] forwardGreedy(int[] tokens, BatchLayout layout, KvCache[] caches, int[] rows) {
      greedy.incrementAndGet();
      return super.forwardGreedy(tokens, layout, caches, rows);
    }

    @Override
    public SampledTokens forwardSample(
        int[] tokens, BatchLayout layout, KvCache[] caches, int[] rows, SamplingBatch s) {
      sampled.incrementAndGet();
      return super.forwardSample(tokens, layout, caches, rows, s);
    }

    @Override
    public void close() {}
  }

  private static List<SamplingParams> mixedParams(int maxNew) {
    SamplingParams greedy = new SamplingParams(0, 1, 0, 0, maxNew, true, List.of());
    SamplingParams hot = new SamplingParams(0.8, 0.95, 0, 11, maxNew, true, List.of());
    return List.of(
        greedy,
        hot,
        new SamplingParams(1.1, 1, 20, 12, maxNew, true, List.of()),
        hot.withMinP(0.05),
        hot.withPenalties(1.3, 0.5, 0.4),
        greedy.withPenalties(1.5, 0, 0),
        hot.withLogitBias(Map.of(7, 3f, 9, -100f)));
  }

  @Test
  void sampledRequestsInOneBatchGiveTheirSoloTokens() throws Exception {
    SplittableRandom r = new SplittableRandom(21);
    List<SamplingParams> params = mixedParams(10);
    List<int[]> prompts = new ArrayList<>();
    List<Collector> cs = new ArrayList<>();
    try (BatchEngine engine = BatchEngine.start(lm, new BatchConfig(64, 256, 7, 4, 4096))) {
      for (SamplingParams p : params) {
        int[] prompt = new int[3 + r.nextInt(20)];
        for (int i = 0; i < prompt.length; i++) {
          prompt[i] = 2 + r.nextInt(300);
        }
        prompts.add(prompt);
        Collector c = new Collector();
        cs.add(c);
        engine.submit(new EngineRequest(null, prompt, p, EOS, 2, c));
      }
      for (int i = 0; i < params.size(); i++) {
        cs.get(i).await();
        int[] solo =
            new Generator(lm).generate(prompts.get(i), params.get(i), EOS, t -> true).outputIds();
        assertThat(cs.get(i).ids()).as("request %d: %s", i, params.get(i)).containsExactly(solo);
      }
    }
    // The bias of -100 keeps token 9 out.
    assertThat(cs.getLast().ids()).doesNotContain(9);
  }

  @Test
  void greedyStepsTakeTheGreedyPathAndOthersTheSamplingOne() throws Exception {
    Counting m = new Counting();
    int[] prompt = {5, 6, 7, 8};
    try (BatchEngine engine = BatchEngine.start(m, new BatchConfig(64, 256, 64, 4, 1024))) {
      Collector c = new Collector();
      engine.submit(
          new EngineRequest(
              null, prompt, new SamplingParams(0, 1, 0, 0, 4, true, List.of()), EOS, -1, c));
      c.await();
      assertThat(m.greedy.get()).isEqualTo(4);
      assertThat(m.sampled.get()).isZero();
      for (EngineRequest req :
          List.of(
              // logprobs, a penalty or a temperature each need the sampling path
              new EngineRequest(
                  null, prompt, new SamplingParams(0, 1, 0, 0, 3, true, List.of()), EOS, 0, c),
              new EngineRequest(
                  null,
                  prompt,
                  SamplingParams.greedy(3).withPenalties(1.2, 0, 0),
                  EOS,
                  -1,
                  new Collector()),
              new EngineRequest(
                  null,
                  prompt,
                  new SamplingParams(0.7, 1, 0, 3, 3, true, List.of()),
                  EOS,
                  -1,
                  new Collector()))) {
        Collector done = new Collector();
        engine.submit(
            new EngineRequest(
                null, req.promptIds(), req.params(), req.eosIds(), req.topLogprobs(), done));
        done.await();
      }
      assertThat(m.greedy.get()).isEqualTo(4);
      assertThat(m.sampled.get()).isEqualTo(9);
    }
  }

  @Test
  void greedyLogprobsAreTheRawLogSoftmax() throws Exception {
    int[] prompt = {3, 4, 5};
    Collector c = new Collector();
    try (BatchEngine engine = BatchEngine.start(lm, new BatchConfig(64, 256, 64, 4, 1024))) {
      engine.submit(new EngineRequest(null, prompt, SamplingParams.greedy(1), EOS, 3, c));
      c.await();
    }
    float[] logits;
    try (KvCache cache = lm.newCache()) {
      logits = lm.forwardAll(prompt, cache);
    }
    int vocab = lm.config().vocabSize();
    int off = (prompt.length - 1) * vocab;
    double max = Double.NEGATIVE_INFINITY;
    for (int i = 0; i < vocab; i++) {
      max = Math.max(max, logits[off + i]);
    }
    double sum = 0;
    for (int i = 0; i < vocab; i++) {
      sum += Math.exp(logits[off + i] - max);
    }
    TokenEvent e = c.events.getFirst();
    assertThat((double) e.logprob())
        .isCloseTo(
            logits[off + e.token()] - max - Math.log(sum),
            org.assertj.core.data.Offset.offset(1e-5));
    assertThat(e.topIds()).hasSize(3).startsWith(e.token());
  }

  @Test
  void biasOutsideTheVocabularyIsRefused() {
    try (BatchEngine engine = BatchEngine.start(lm, new BatchConfig(64, 256, 64, 4, 1024))) {
      int vocab = lm.config().vocabSize();
      SamplingParams p = SamplingParams.greedy(2).withLogitBias(Map.of(vocab, 1f));
      assertThatThrownBy(
              () ->
                  engine.submit(
                      new EngineRequest(null, new int[] {3}, p, EOS, -1, new Collector())))
          .hasMessageContaining("logit_bias token id " + vocab + " is outside the vocabulary");
    }
  }
}
