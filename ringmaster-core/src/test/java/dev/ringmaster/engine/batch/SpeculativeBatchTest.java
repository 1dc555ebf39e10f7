package dev.ringmaster.engine.batch;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.backend.cpu.model.CausalLm;
import dev.ringmaster.engine.SamplingParams;
import dev.ringmaster.engine.spec.ServingSpeculation;
import dev.ringmaster.engine.spec.SpeculationSnapshot;
import dev.ringmaster.engine.spec.SpeculativeAlgorithm;
import dev.ringmaster.engine.spec.SpeculativeConfig;
import dev.ringmaster.engine.spec.SpeculativePolicy;
import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.runtime.LanguageModel;
import dev.ringmaster.testing.ForwardingLanguageModel;
import dev.ringmaster.testing.RepoPaths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntFunction;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Speculation inside the batch engine: greedy outputs of concurrent requests equal the outputs
 * without speculation (n-gram and draft-model drafts, MLA and GQA fixtures, the embedded model,
 * with and without the overlap schedule, with a pool tight enough to preempt), seeded sampled
 * outputs repeat, stop tokens / max tokens / a listener's stop cut an accepted run where plain
 * decoding stops, and no KV block is left held once the prefix cache is flushed.
 */
class SpeculativeBatchTest {
  private static final int PAGE = 4;
  private static final Map<String, CausalLm> MODELS = new HashMap<>();

  @BeforeAll
  static void load() {
    for (String dir :
        List.of(
            "fixtures/golden/deepseek_v3_basic",
            "fixtures/golden/deepseek_v3_bf16",
            "fixtures/golden/qwen3_moe_basic",
            "fixtures/golden/qwen3_moe_f16",
            "models/sotu-moe",
            "models/sotu-moe/draft")) {
      MODELS.put(dir, CausalLm.load(RepoPaths.require(dir)));
    }
  }

  @AfterAll
  static void close() {
    MODELS.values().forEach(CausalLm::close);
  }

  /** Random prompts, half of them a phrase said three times (so n-gram drafts find matches). */
  static List<int[]> prompts(int vocab, int n) {
    SplittableRandom r = new SplittableRandom(22);
    int range = Math.min(vocab - 2, 300);
    List<int[]> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      int[] p = new int[9 + r.nextInt(8)];
      int period = i % 2 == 0 ? 3 + r.nextInt(3) : p.length;
      for (int j = 0; j < p.length; j++) {
        p[j] = j < period ? 2 + r.nextInt(range) : p[j - period];
      }
      out.add(p);
    }
    return out;
  }

  /** What a workload produced. */
  record Run(List<int[]> outputs, List<RequestOutcome> outcomes, SpeculationSnapshot spec) {}

  /** Runs every prompt at once and checks that every block comes back after a flush. */
  static Run run(
      LanguageModel lm,
      BatchConfig cfg,
      ServingSpeculation spec,
      List<int[]> prompts,
      IntFunction<SamplingParams> params,
      IntFunction<Collector> collectors)
      throws Exception {
    List<int[]> outputs = new ArrayList<>();
    List<RequestOutcome> outcomes = new ArrayList<>();
    SpeculationSnapshot snap;
    try (BatchEngine engine = BatchEngine.start(lm, cfg, spec)) {
      List<Collector> cs = new ArrayList<>();
      for (int i = 0; i < prompts.size(); i++) {
        Collector c = collectors.apply(i);
        cs.add(c);
        engine.submit(new EngineRequest(null, prompts.get(i), params.apply(i), new int[0], -1, c));
      }
      for (Collector c : cs) {
        outcomes.add(c.await());
        outputs.add(c.ids());
      }
      assertThat(engine.awaitIdle(Duration.ofSeconds(5))).isTrue();
      engine.flushCache().get(5, TimeUnit.SECONDS);
      assertThat(engine.pool().used()).as("KV blocks held after the flush").isZero();
      snap = engine.speculation().orElse(null);
    }
    return new Run(outputs, outcomes, snap);
  }

  static ServingSpeculation always(String algorithm, CausalLm draft, int k) {
    return new ServingSpeculation(
        SpeculativeConfig.of(SpeculativeAlgorithm.parse(algorithm), k),
        draft,
        SpeculativePolicy.ALWAYS);
  }

  private static SamplingParams greedy(int maxNew) {
    return new SamplingParams(0, 1, 0, 0, maxNew, true, List.of());
  }

  @ParameterizedTest(name = "{0} {1} draft {2} k={3} overlap {4} blocks {5}")
  @CsvSource({
    "fixtures/golden/deepseek_v3_basic, NGRAM, -, 3, true, 4096",
    "fixtures/golden/deepseek_v3_basic, STANDALONE, fixtures/golden/deepseek_v3_bf16, 4, true, 4096",
    "fixtures/golden/deepseek_v3_basic, NGRAM, -, 2, false, 40",
    "fixtures/golden/qwen3_moe_basic, NGRAM, -, 4, true, 4096",
    "fixtures/golden/qwen3_moe_basic, STANDALONE, fixtures/golden/qwen3_moe_f16, 3, false, 4096",
    "models/sotu-moe, NGRAM, -, 4, true, 4096",
    "models/sotu-moe, STANDALONE, models/sotu-moe/draft, 3, true, 4096",
    "models/sotu-moe, STANDALONE, models/sotu-moe/draft, 2, true, 40",
  })
  void greedyOutputsEqualOutputsWithoutSpeculation(
      String target, String algorithm, String draft, int k, boolean overlap, int blocks)
      throws Exception {
    CausalLm lm = MODELS.get(target);
    List<int[]> prompts = prompts(lm.config().vocabSize(), 8);
    BatchConfig cfg = new BatchConfig(8, 64, 32, PAGE, blocks).withOverlap(overlap);
    Run plain = run(lm, cfg, null, prompts, i -> greedy(20 + i), i -> new Collector());
    ServingSpeculation spec = always(algorithm, draft.equals("-") ? null : MODELS.get(draft), k);
    Run fast = run(lm, cfg, spec, prompts, i -> greedy(20 + i), i -> new Collector());
    for (int i = 0; i < prompts.size(); i++) {
      assertThat(fast.outputs().get(i)).as("request %d", i).containsExactly(plain.outputs().get(i));
      assertThat(fast.outcomes().get(i).reason()).isEqualTo(FinishReason.LENGTH);
    }
    SpeculationSnapshot s = fast.spec();
    assertThat(s.draftTokens()).as("drafts were verified").isPositive();
    assertThat(s.acceptedTokens()).as("some drafts were accepted").isPositive();
    assertThat(s.enabledFraction()).isEqualTo(1.0);
    if (draft.endsWith("/draft")) {
      assertThat(s.acceptedTokens()).as("and some rejected").isLessThan(s.draftTokens());
    }
  }

  /** {@code lm} counting its logits and argmax forwards; closing it leaves {@code lm} open. */
  private static final class Counting extends ForwardingLanguageModel {
    final AtomicInteger forwards = new AtomicInteger();
    final AtomicInteger greedyForwards = new AtomicInteger();

    Counting(LanguageModel lm) {
      super(lm);
    }

    @Override
    public float[] forward(int[] tokens, BatchLayout layout, KvCache[] caches, int[] logitRows) {
      forwards.incrementAndGet();
      return inner.forward(tokens, layout, caches, logitRows);
    }

    @Override
    public int[] forwardGreedy(int[] tokens, BatchLayout layout, KvCache[] caches, int[] rows) {
      greedyForwards.incrementAndGet();
      return inner.forwardGreedy(tokens, layout, caches, rows);
    }

    @Override
    public void close() {}
  }

  @Test
  void greedyDraftsAreVerifiedFromArgmaxRowsAndBiasedOnesFromLogits() throws Exception {
    CausalLm lm = MODELS.get("models/sotu-moe");
    List<int[]> prompts = prompts(lm.config().vocabSize(), 6);
    BatchConfig cfg = new BatchConfig(8, 64, 32, PAGE, 4096);
    Run plain = run(lm, cfg, null, prompts, i -> greedy(20), i -> new Collector());
    Counting counted = new Counting(lm);
    Run fast =
        run(counted, cfg, always("NGRAM", null, 4), prompts, i -> greedy(20), i -> new Collector());
    for (int i = 0; i < prompts.size(); i++) {
      assertThat(fast.outputs().get(i)).as("request %d", i).containsExactly(plain.outputs().get(i));
    }
    assertThat(fast.spec().acceptedTokens()).isPositive();
    assertThat(counted.greedyForwards.get()).isPositive();
    assertThat(counted.forwards.get()).as("no step took logits back").isZero();

    // A logit bias changes the argmax: its drafts are verified from the logits, and the outputs
    // still equal plain decoding's with the same bias.
    IntFunction<SamplingParams> biased =
        i -> greedy(20).withLogitBias(Map.of(prompts.get(i)[0], 3.0f));
    Run plainBiased = run(lm, cfg, null, prompts, biased, i -> new Collector());
    Counting countedBiased = new Counting(lm);
    Run fastBiased =
        run(countedBiased, cfg, always("NGRAM", null, 4), prompts, biased, i -> new Collector());
    for (int i = 0; i < prompts.size(); i++) {
      assertThat(fastBiased.outputs().get(i))
          .as("biased request %d", i)
          .containsExactly(plainBiased.outputs().get(i));
    }
    assertThat(fastBiased.spec().draftTokens()).isPositive();
    assertThat(countedBiased.forwards.get()).as("verify steps took logits").isPositive();
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource({"NGRAM", "STANDALONE"})
  void seededSampledOutputsRepeat(String algorithm) throws Exception {
    CausalLm lm = MODELS.get("models/sotu-moe");
    CausalLm draft = algorithm.equals("STANDALONE") ? MODELS.get("models/sotu-moe/draft") : null;
    List<int[]> prompts = prompts(lm.config().vocabSize(), 6);
    BatchConfig cfg = new BatchConfig(8, 64, 32, PAGE, 4096);
    IntFunction<SamplingParams> sampled =
        i -> new SamplingParams(0.8, 0.95, 40, 500 + i, 24, true, List.of());
    Run a = run(lm, cfg, always(algorithm, draft, 3), prompts, sampled, i -> new Collector());
    // The second run batches differently: one request at a time.
    Run b =
        run(
            lm,
            new BatchConfig(1, 64, 32, PAGE, 4096),
            always(algorithm, draft, 3),
            prompts,
            sampled,
            i -> new Collector());
    Run greedyRun = run(lm, cfg, null, prompts, i -> greedy(24), i -> new Collector());
    int differ = 0;
    for (int i = 0; i < prompts.size(); i++) {
      assertThat(b.outputs().get(i)).as("request %d", i).containsExactly(a.outputs().get(i));
      differ += Arrays.equals(a.outputs().get(i), greedyRun.outputs().get(i)) ? 0 : 1;
    }
    assertThat(differ).as("sampling is not greedy").isPositive();
    assertThat(a.spec().acceptedTokens()).isPositive();
  }

  @Test
  void stopTokensMaxTokensAndListenerStopsCutAcceptedRuns() throws Exception {
    CausalLm lm = MODELS.get("models/sotu-moe");
    CausalLm draft = MODELS.get("models/sotu-moe/draft");
    List<int[]> prompts = prompts(lm.config().vocabSize(), 6);
    BatchConfig cfg = new BatchConfig(8, 64, 32, PAGE, 4096);
    Run full = run(lm, cfg, null, prompts, i -> greedy(30), i -> new Collector());
    // Stop at a token that first appears a few tokens in; max tokens short of a whole run.
    List<Integer> stops = new ArrayList<>();
    for (int[] out : full.outputs()) {
      stops.add(out[3 + out.length % 5]);
    }
    IntFunction<SamplingParams> stopping =
        i -> new SamplingParams(0, 1, 0, 0, 30, true, List.of(stops.get(i)));
    IntFunction<SamplingParams> short_ = i -> greedy(1 + i * 2);
    for (String algorithm : List.of("NGRAM", "STANDALONE")) {
      ServingSpeculation spec = always(algorithm, algorithm.equals("NGRAM") ? null : draft, 5);
      Run stopped = run(lm, cfg, spec, prompts, stopping, i -> new Collector());
      Run capped = run(lm, cfg, spec, prompts, short_, i -> new Collector());
      int[] seen = new int[prompts.size()];
      Run listened =
          run(
              lm,
              cfg,
              spec,
              prompts,
              i -> greedy(30),
              i -> new Collector(t -> ++seen[i] < 2 + i * 3));
      for (int i = 0; i < prompts.size(); i++) {
        int[] out = full.outputs().get(i);
        int at = indexOf(out, stops.get(i));
        assertThat(stopped.outputs().get(i))
            .as("%s stop, request %d", algorithm, i)
            .containsExactly(Arrays.copyOf(out, at + 1));
        assertThat(stopped.outcomes().get(i).reason()).isEqualTo(FinishReason.STOP);
        assertThat(capped.outputs().get(i))
            .as("%s max tokens, request %d", algorithm, i)
            .containsExactly(Arrays.copyOf(out, 1 + i * 2));
        assertThat(capped.outcomes().get(i).reason()).isEqualTo(FinishReason.LENGTH);
        assertThat(listened.outputs().get(i))
            .as("%s listener stop, request %d", algorithm, i)
            .containsExactly(Arrays.copyOf(out, 2 + i * 3));
      }
    }
  }

  @Test
  void autoSwitchesItselfOffWithTheCpuCostsAndStaysOnWhereVerifyIsCheap() throws Exception {
    CausalLm lm = MODELS.get("models/sotu-moe");
    List<int[]> prompts = prompts(lm.config().vocabSize(), 4);
    BatchConfig cfg = new BatchConfig(4, 64, 32, PAGE, 4096);
    Run plain = run(lm, cfg, null, prompts, i -> greedy(120), i -> new Collector());
    SpeculativeConfig ngram = SpeculativeConfig.of(SpeculativeAlgorithm.NGRAM, 4);
    // A 4-draft verify at 2.9 decode steps (as measured on the CPU) and at 1.04 (weight-bound).
    // Steps of 100 ms keep the measured drafting time (microseconds, more on a loaded machine) out
    // of the decision, so the test does not depend on this machine's speed.
    for (double slope : new double[] {0.475, 0.01}) {
      var cost =
          dev.ringmaster.engine.spec.TabulatedSpeculationCost.linear(
              new int[] {1}, new double[] {1e8}, slope, 4);
      ServingSpeculation auto =
          new ServingSpeculation(
              ngram, null, SpeculativePolicy.AUTO, ServingSpeculation.DEFAULT_MARGIN, cost);
      Run r = run(lm, cfg, auto, prompts, i -> greedy(120), i -> new Collector());
      for (int i = 0; i < prompts.size(); i++) {
        assertThat(r.outputs().get(i)).containsExactly(plain.outputs().get(i));
      }
      SpeculationSnapshot s = r.spec();
      assertThat(s.decisions()).isPositive();
      if (slope > 0.2) {
        assertThat(s.acceptLength()).as("accept length").isLessThan(2.9);
        assertThat(s.enabledFraction()).as("auto switched off").isLessThan(0.5);
        assertThat(s.enabled()).isFalse();
      } else {
        assertThat(s.enabledFraction()).as("auto stayed on").isGreaterThan(0.9);
      }
    }
  }

  private static int indexOf(int[] a, int v) {
    for (int i = 0; i < a.length; i++) {
      if (a[i] == v) {
        return i;
      }
    }
    throw new AssertionError("token " + v + " not in the output");
  }
}
