package dev.ringmaster.engine.spec;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ringmaster.backend.DType;
import dev.ringmaster.backend.cpu.model.CausalLm;
import dev.ringmaster.engine.Generator;
import dev.ringmaster.engine.SamplingParams;
import dev.ringmaster.model.random.RandomEagle3HeadWriter;
import dev.ringmaster.model.tokenizer.Tokenizer;
import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.DraftHead;
import dev.ringmaster.runtime.HiddenCapture;
import dev.ringmaster.runtime.HiddenLogits;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.runtime.sampling.SamplingDistribution;
import dev.ringmaster.testing.GoldenFixture;
import dev.ringmaster.testing.RepoPaths;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * EAGLE3: random-weight heads over the golden fixtures and the embedded model; the target's
 * captured layer inputs; greedy output with EAGLE3 drafts equals plain greedy output; the head's
 * cache after a rejected chain equals a fresh drafter's; sampled drafts keep the target's
 * distribution (chi-square), draft-vocabulary gaps included.
 */
class Eagle3SpeculationTest {
  @TempDir static Path tmp;

  /**
   * A random head over {@code target} (half its vocabulary as the draft vocabulary) with {@code
   * aux} as its layer ids ("-" for the default capture).
   */
  static Path head(CausalLm target, String name, String aux) throws Exception {
    Path dir = tmp.resolve(name);
    if (!java.nio.file.Files.exists(dir.resolve("model.safetensors"))) {
      List<Integer> ids =
          aux.equals("-") ? null : Arrays.stream(aux.split(" ")).map(Integer::valueOf).toList();
      ObjectNode cfg =
          RandomEagle3HeadWriter.config(target.config(), target.config().vocabSize() / 2, ids);
      RandomEagle3HeadWriter.write(cfg, dir, DType.BF16, 5);
    }
    return dir;
  }

  static int[] prompt(String target) {
    if (target.startsWith("models/")) {
      return Tokenizer.load(RepoPaths.require(target))
          .encode("We the People of the United States, in Order to form a more perfect Union");
    }
    return GoldenFixture.load(RepoPaths.require(target)).promptIds();
  }

  @Test
  void capturedLayerInputsEndInTheFinalNormsInput() throws Exception {
    try (CausalLm lm = CausalLm.load(RepoPaths.require("fixtures/golden/deepseek_v3_basic"))) {
      int[] prompt = {5, 9, 11, 2, 7};
      int[] rows = {0, 4};
      int l = lm.config().numLayers();
      int h = lm.config().hiddenSize();
      float[] plain =
          lm.forward(prompt, BatchLayout.single(5, 0), new KvCache[] {lm.newCache()}, rows);
      HiddenLogits fin =
          lm.forwardHidden(prompt, BatchLayout.single(5, 0), new KvCache[] {lm.newCache()}, rows);
      HiddenLogits cap =
          lm.forwardHidden(
              prompt,
              BatchLayout.single(5, 0),
              new KvCache[] {lm.newCache()},
              rows,
              HiddenCapture.ofLayerInputs(1, l, 1));
      assertThat(cap.logits()).containsExactly(plain);
      assertThat(cap.hidden()).hasSize(5 * 3 * h);
      for (int t = 0; t < 5; t++) {
        float[] first = Arrays.copyOfRange(cap.hidden(), (t * 3) * h, (t * 3 + 1) * h);
        float[] last = Arrays.copyOfRange(cap.hidden(), (t * 3 + 1) * h, (t * 3 + 2) * h);
        float[] again = Arrays.copyOfRange(cap.hidden(), (t * 3 + 2) * h, (t * 3 + 3) * h);
        assertThat(again).as("a repeated layer is captured twice").containsExactly(first);
        assertThat(last).isNotEqualTo(first);
        // The last layer's output, RMS-normalised, is the final normed hidden state up to the
        // norm's per-dimension weight: equal ratios of matching signs.
        float[] normed = Arrays.copyOfRange(fin.hidden(), t * h, (t + 1) * h);
        double ss = 0;
        for (float v : last) {
          ss += v * v;
        }
        double inv = 1 / Math.sqrt(ss / h + lm.config().rmsNormEps());
        for (int i = 0; i < h; i++) {
          double unit = last[i] * inv;
          if (Math.abs(unit) > 1e-3) {
            assertThat(normed[i] / unit).as("norm weight of dim %d", i).isPositive();
          }
        }
      }
      assertThatThrownBy(
              () ->
                  lm.forwardHidden(
                      prompt,
                      BatchLayout.single(5, 0),
                      new KvCache[] {lm.newCache()},
                      rows,
                      HiddenCapture.ofLayerInputs(l + 1)))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("has " + l + " decoder layers");
    }
  }

  @ParameterizedTest(name = "{0} aux {1} k={2}")
  @CsvSource({
    "fixtures/golden/deepseek_v3_basic, 0 1 2, 1",
    "fixtures/golden/deepseek_v3_basic, 0 1 2, 4",
    "fixtures/golden/qwen3_moe_basic, -, 2",
    "fixtures/golden/qwen3_moe_basic, 0 1 3, 5",
    "models/sotu-moe, -, 3",
    "models/sotu-moe, 1 3 5, 2",
  })
  void greedyOutputIsPlainGreedyOutput(String target, String aux, int k) throws Exception {
    try (CausalLm lm = CausalLm.load(RepoPaths.require(target));
        DraftHead head =
            lm.loadEagle3Head(
                head(lm, Path.of(target).getFileName() + "-" + aux.replace(' ', '_'), aux))) {
      int[] prompt = prompt(target);
      SamplingParams greedy = new SamplingParams(0, 1, 0, 0, 40, true, List.of());
      int[] plain = new Generator(lm).generate(prompt, greedy, new int[0], t -> true).outputIds();
      SpeculativeResult r =
          new SpeculativeGenerator(
                  lm, SpeculativeConfig.of(SpeculativeAlgorithm.EAGLE3, k), null, head)
              .generate(prompt, greedy, new int[0], t -> true);
      assertThat(r.generation().outputIds()).containsExactly(plain);
      SpeculationStats s = r.stats();
      assertThat(s.draftTokens()).as("the head drafted").isPositive();
      assertThat(s.verifySteps() + s.acceptedTokens()).isEqualTo(plain.length - 1);
    }
  }

  /** The head trained for the embedded model drafts tokens the model accepts; the output stands. */
  @Test
  void theEmbeddedModelsTrainedHeadIsAcceptedAndKeepsTheGreedyTokens() throws Exception {
    try (CausalLm lm = CausalLm.load(RepoPaths.require("models/sotu-moe"));
        DraftHead head = lm.loadEagle3Head(RepoPaths.require("models/sotu-moe/eagle3"))) {
      int[] prompt = prompt("models/sotu-moe");
      SamplingParams greedy = new SamplingParams(0, 1, 0, 0, 60, true, List.of());
      int[] plain = new Generator(lm).generate(prompt, greedy, new int[0], t -> true).outputIds();
      SpeculativeResult r =
          new SpeculativeGenerator(
                  lm, SpeculativeConfig.of(SpeculativeAlgorithm.EAGLE3, 3), null, head)
              .generate(prompt, greedy, new int[0], t -> true);
      assertThat(r.generation().outputIds()).containsExactly(plain);
      // Random heads accept next to nothing (accept length about 1.0); the trained one does.
      assertThat(r.stats().acceptLength()).isGreaterThan(1.3);
    }
  }

  @Test
  void theHeadsRowsAtOnceEqualTheSameRowsOneByOne() throws Exception {
    try (CausalLm lm = CausalLm.load(RepoPaths.require("fixtures/golden/qwen3_moe_basic"));
        DraftHead head = lm.loadEagle3Head(head(lm, "qwen-rows", "0 1 3"))) {
      int w = head.targetWidth();
      int[] tokens = {3, 17, 40, 9};
      float[] hidden = new float[tokens.length * w];
      for (int i = 0; i < hidden.length; i++) {
        hidden[i] = (float) Math.cos(i * 0.21);
      }
      HiddenLogits all = head.forward(tokens, hidden, head.newCache());
      KvCache one = head.newCache();
      HiddenLogits last = null;
      for (int t = 0; t < tokens.length; t++) {
        last =
            head.forward(
                new int[] {tokens[t]}, Arrays.copyOfRange(hidden, t * w, (t + 1) * w), one);
      }
      assertThat(one.length()).isEqualTo(tokens.length);
      for (int i = 0; i < last.logits().length; i++) {
        float a = all.logits()[i];
        float b = last.logits()[i];
        if (Float.isInfinite(a)) {
          assertThat(b).isEqualTo(a);
        } else {
          assertThat(Math.abs(a - b)).as("logit %d", i).isLessThan(1e-4f);
        }
      }
      int c = head.chainWidth();
      assertThat(all.hidden()).hasSize(tokens.length * c);
      HiddenLogits chained =
          head.chain(
              new int[] {5}, Arrays.copyOfRange(all.hidden(), 3 * c, 4 * c), head.newCache());
      assertThat(chained.hidden()).hasSize(c);
      long outside =
          java.util.stream.IntStream.range(0, chained.logits().length)
              .filter(i -> Float.isInfinite(chained.logits()[i]))
              .count();
      assertThat(outside)
          .as("tokens outside the draft vocabulary")
          .isEqualTo(lm.config().vocabSize() - lm.config().vocabSize() / 2);
    }
  }

  @Test
  void headCacheAfterARejectedChainEqualsAFreshDrafterFedTheSameHistory() throws Exception {
    try (CausalLm lm = CausalLm.load(RepoPaths.require("fixtures/golden/deepseek_v3_basic"));
        DraftHead head = lm.loadEagle3Head(head(lm, "v3-rollback", "0 1 2"))) {
      int w = head.targetWidth();
      RowDistribution greedy =
          RowDistribution.of(SamplingParams.greedy(8), lm.config().vocabSize());
      int[] context = {5, 9, 11, 2, 7, 30, 31, 32, 33};
      float[] hidden = new float[8 * w];
      for (int i = 0; i < hidden.length; i++) {
        hidden[i] = (float) Math.sin(i * 0.37);
      }
      HiddenStateDrafter spec = new HiddenStateDrafter(head, greedy);
      spec.observeHidden(0, hidden, 0, 5);
      assertThat(spec.propose(context, 6, 4).length()).isEqualTo(4);
      assertThat(spec.cache().length()).isEqualTo(5 + 3);
      spec.observeHidden(5, hidden, 5, 2);
      Draft second = spec.propose(context, 8, 2);
      HiddenStateDrafter fresh = new HiddenStateDrafter(head, greedy);
      fresh.observeHidden(0, hidden, 0, 7);
      Draft expected = fresh.propose(context, 8, 2);
      assertThat(second.tokens()).containsExactly(expected.tokens());
      KvCache a = spec.cache();
      KvCache b = fresh.cache();
      assertThat(a.length()).isEqualTo(8).isEqualTo(b.length());
      for (int i = 0; i < 8 * a.widthA(); i++) {
        assertThat(Math.abs(a.a(0)[i] - b.a(0)[i])).isLessThanOrEqualTo(1e-5f);
        assertThat(Math.abs(a.b(0)[i] - b.b(0)[i])).isLessThanOrEqualTo(1e-5f);
      }
      spec.close();
      fresh.close();
    }
  }

  @Test
  void sampledDraftsLeaveTheTargetsDistributionUnchanged() throws Exception {
    try (CausalLm lm = CausalLm.load(RepoPaths.require("fixtures/golden/qwen3_moe_basic"));
        DraftHead head = lm.loadEagle3Head(head(lm, "qwen-sampled", "0 1 3"))) {
      int vocab = lm.config().vocabSize();
      int[] context =
          GoldenFixture.load(RepoPaths.require("fixtures/golden/qwen3_moe_basic")).promptIds();
      int n = context.length;
      HiddenLogits target =
          lm.forwardHidden(
              context,
              BatchLayout.single(n, 0),
              new KvCache[] {lm.newCache()},
              new int[] {n - 1},
              head.capture());
      // Temperature 2 flattens the target so that the draft vocabulary's gaps carry mass.
      SamplingParams base = new SamplingParams(2.0, 1, 0, 0, 1, true, List.of());
      double[] p = RowDistribution.of(base, vocab).probabilities(target.logits(), 0);
      float[] rows = new float[2 * vocab];
      System.arraycopy(target.logits(), 0, rows, 0, vocab);
      System.arraycopy(target.logits(), 0, rows, vocab, vocab);
      int draws = 20_000;
      int[] counts = new int[vocab];
      int accepted = 0;
      double missing = 0;
      for (int seed = 0; seed < draws; seed++) {
        RowDistribution rule =
            RowDistribution.of(new SamplingParams(2.0, 1, 0, seed, 1, true, List.of()), vocab);
        try (HiddenStateDrafter drafter = new HiddenStateDrafter(head, rule)) {
          drafter.observeHidden(0, target.hidden(), 0, n);
          Draft d = drafter.propose(context, n, 1);
          if (seed == 0) {
            for (int i = 0; i < vocab; i++) {
              if (d.probabilities()[0][i] == 0) {
                missing += p[i];
              }
            }
          }
          DraftVerifier.Outcome o = new DraftVerifier(rule, vocab).verify(d, rows, 0);
          counts[o.accepted() == 1 ? d.tokens()[0] : o.token()]++;
          accepted += o.accepted();
        }
      }
      assertThat(missing).as("target mass outside the draft vocabulary").isGreaterThan(0.2);
      assertThat(accepted).as("some drafts were accepted").isGreaterThan(draws / 20);
      assertThat(SamplingDistribution.misfit(counts, p)).isNull();
    }
  }

  @Test
  void sampledEagle3RepeatsWithTheSameSeed() throws Exception {
    try (CausalLm lm = CausalLm.load(RepoPaths.require("models/sotu-moe"));
        DraftHead head = lm.loadEagle3Head(head(lm, "sotu-seed", "1 3 5"))) {
      SpeculativeGenerator gen =
          new SpeculativeGenerator(
              lm, SpeculativeConfig.of(SpeculativeAlgorithm.EAGLE3, 3), null, head);
      int[] prompt = prompt("models/sotu-moe");
      SamplingParams p5 = new SamplingParams(0.8, 0.95, 0, 5, 30, true, List.of());
      SamplingParams p6 = new SamplingParams(0.8, 0.95, 0, 6, 30, true, List.of());
      int[] first = gen.generate(prompt, p5, new int[0], t -> true).generation().outputIds();
      assertThat(first).hasSize(30);
      assertThat(gen.generate(prompt, p5, new int[0], t -> true).generation().outputIds())
          .containsExactly(first);
      assertThat(gen.generate(prompt, p6, new int[0], t -> true).generation().outputIds())
          .isNotEqualTo(first);
    }
  }

  @Test
  void eagle3WithoutAHeadIsRefused() {
    try (CausalLm lm = CausalLm.load(RepoPaths.require("fixtures/golden/deepseek_v3_basic"))) {
      assertThatThrownBy(
              () ->
                  new SpeculativeGenerator(
                      lm, SpeculativeConfig.of(SpeculativeAlgorithm.parse("eagle3"), 2), null))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("--speculative-draft-model-path");
    }
  }
}
