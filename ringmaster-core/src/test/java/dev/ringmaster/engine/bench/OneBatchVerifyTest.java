package dev.ringmaster.engine.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringmaster.backend.cpu.model.CausalLm;
import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.runtime.LanguageModel;
import dev.ringmaster.testing.ForwardingLanguageModel;
import dev.ringmaster.testing.RepoPaths;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The verify passes of {@code bench one-batch --speculative-num-draft-tokens}: each sequence
 * extends by K + 1 tokens over its cached context with logits for every row, the caches are rolled
 * back after every pass, and the pass is reported in decode steps.
 */
class OneBatchVerifyTest {
  private static final int INPUT = 4;
  private static final int OUTPUT = 6;
  private static final long DECODE_MS = 10;
  private static final long VERIFY_MS = 100;

  /** Records each forward's shape; decode steps sleep {@link #DECODE_MS}, verify passes more. */
  private static final class Recording extends ForwardingLanguageModel {
    final List<int[]> verifyShapes = new ArrayList<>(); // {sequences, tokens, rows, first pos}
    final List<Integer> lengthsBefore = new ArrayList<>();
    final List<int[]> verifyTokens = new ArrayList<>();

    Recording(LanguageModel lm) {
      super(lm);
    }

    @Override
    public float[] forward(int[] tokens, BatchLayout layout, KvCache[] caches, int[] logitRows) {
      int seqs = layout.numSeqs();
      boolean verify = tokens.length > seqs && layout.positions()[0] >= INPUT;
      if (verify) {
        verifyShapes.add(new int[] {seqs, tokens.length, logitRows.length, layout.positions()[0]});
        lengthsBefore.add(caches[0].length());
        verifyTokens.add(tokens.clone());
        sleep(VERIFY_MS);
      } else if (tokens.length == seqs) {
        sleep(DECODE_MS);
      }
      return super.forward(tokens, layout, caches, logitRows);
    }

    @Override
    public int[] forwardGreedy(
        int[] tokens, BatchLayout layout, KvCache[] caches, int[] logitRows) {
      float[] logits = forward(tokens, layout, caches, logitRows);
      int vocab = config().vocabSize();
      int[] out = new int[logitRows.length];
      for (int r = 0; r < out.length; r++) {
        out[r] = dev.ringmaster.backend.cpu.CpuOps.argmax(logits, r * vocab, vocab);
      }
      return out;
    }

    private static void sleep(long ms) {
      try {
        Thread.sleep(ms);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  @Test
  void verifyPassesExtendEverySequenceByKPlusOneAndRollBack() throws Exception {
    try (Recording m =
        new Recording(CausalLm.load(RepoPaths.require("fixtures/golden/deepseek_v3_bf16")))) {
      List<OneBatchBenchmark.Result> rs =
          OneBatchBenchmark.run(
              m,
              List.of(3),
              INPUT,
              OUTPUT,
              7,
              new OneBatchBenchmark.Warmup(1, 0),
              List.of(2, 4),
              new PrintStream(new ByteArrayOutputStream()));
      OneBatchBenchmark.Result r = rs.getFirst();
      assertThat(r.verify())
          .extracting(OneBatchBenchmark.VerifyCost::draftTokens)
          .containsExactly(2, 4);
      // Per draft length: the untimed passes, then one timed pass per decode step; first over
      // the decoded context, then over a repeating text (a prompt of INPUT copies of one token).
      int passes = 3 + OUTPUT;
      assertThat(m.verifyShapes).hasSize(4 * passes);
      for (int i = 0; i < m.verifyShapes.size(); i++) {
        boolean repeating = i >= 2 * passes;
        int k = i % (2 * passes) < passes ? 2 : 4;
        int context = repeating ? INPUT : INPUT + OUTPUT;
        int[] shape = m.verifyShapes.get(i);
        assertThat(shape[0]).isEqualTo(3);
        assertThat(shape[1]).as("3 sequences x (K + 1) tokens").isEqualTo(3 * (k + 1));
        assertThat(shape[2]).as("logits for every row").isEqualTo(3 * (k + 1));
        assertThat(shape[3]).as("after the cached context").isEqualTo(context);
        assertThat(m.lengthsBefore.get(i)).as("rolled back after each pass").isEqualTo(context);
        if (repeating) {
          int[] tokens = m.verifyTokens.get(i);
          for (int t = 0; t < tokens.length; t++) {
            assertThat(tokens[t])
                .as("one token per sequence")
                .isEqualTo(tokens[t / (k + 1) * (k + 1)]);
          }
        }
      }
      for (OneBatchBenchmark.VerifyCost v : r.verify()) {
        assertThat(v.medianMs()).isGreaterThanOrEqualTo(VERIFY_MS);
        assertThat(v.decodeSteps()).isEqualTo(v.medianMs() / r.decodeMedianMs());
        assertThat(v.decodeSteps()).as("a pass sleeps 10x a decode step").isGreaterThan(1.5);
        assertThat(v.repeatMedianMs()).isGreaterThanOrEqualTo(VERIFY_MS);
        assertThat(v.repeatDecodeSteps()).as("over the repeating text's decode").isGreaterThan(1.5);
      }
    }
  }

  @Test
  void aRolledBackVerifyLeavesTheCacheAsARunWithoutIt() throws Exception {
    try (LanguageModel m = CausalLm.load(RepoPaths.require("fixtures/golden/deepseek_v3_bf16"));
        KvCache withVerify = m.newCache();
        KvCache without = m.newCache()) {
      int[] prompt = {5, 9, 13, 2, 7};
      m.forwardAll(prompt, withVerify);
      m.forwardAll(prompt, without);
      OneBatchBenchmark.timeVerify(
          m, new KvCache[] {withVerify}, new int[] {11}, 3, 2, new SplittableRandom(1));
      assertThat(withVerify.length()).isEqualTo(prompt.length);
      float[] a = m.forwardAll(new int[] {11, 4}, withVerify);
      float[] b = m.forwardAll(new int[] {11, 4}, without);
      assertThat(a).containsExactly(b);
    }
  }

  @Test
  void draftLengthsBelowOneAndPassesPastTheContextAreRefused() throws Exception {
    try (LanguageModel m = CausalLm.load(RepoPaths.require("fixtures/golden/deepseek_v3_bf16"))) {
      PrintStream quiet = new PrintStream(new ByteArrayOutputStream());
      OneBatchBenchmark.Warmup w = new OneBatchBenchmark.Warmup(1, 0);
      assertThatThrownBy(
              () -> OneBatchBenchmark.run(m, List.of(1), INPUT, OUTPUT, 7, w, List.of(0), quiet))
          .hasMessageContaining("--speculative-num-draft-tokens must be at least 1, got 0");
      int context = m.config().maxPositionEmbeddings();
      assertThatThrownBy(
              () -> OneBatchBenchmark.run(m, List.of(1), context - 3, 2, 7, w, List.of(4), quiet))
          .hasMessageContaining("exceeds the model's context")
          .hasMessageContaining("lower --input-len or --output-len");
    }
  }
}
