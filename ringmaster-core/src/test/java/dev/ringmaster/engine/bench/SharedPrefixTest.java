package dev.ringmaster.engine.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringmaster.backend.cpu.model.CausalLm;
import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.testing.RepoPaths;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * {@code bench one-batch --shared-prefix}: one prompt prefilled once and shared by every sequence
 * of the batch decodes exactly as the same prompt prefilled into each sequence's own cache.
 */
class SharedPrefixTest {
  private static final int PROMPT = 12;
  private static final int BATCH = 3;

  @Test
  void sharedPagesDecodeAsPrefillsOfTheirOwn() {
    try (CausalLm lm = CausalLm.load(RepoPaths.require("fixtures/golden/deepseek_v3_bf16"))) {
      int vocab = lm.config().vocabSize();
      int[] prompt = new int[PROMPT];
      for (int i = 0; i < PROMPT; i++) {
        prompt[i] = (3 + 5 * i) % vocab;
      }
      KvCache[] shared = new KvCache[BATCH];
      KvCache[] own = new KvCache[BATCH];
      try {
        for (int s = 0; s < BATCH; s++) {
          shared[s] = lm.newCache();
          own[s] = lm.newCache();
        }
        int[] next = SharedPrefix.prefill(lm, shared, prompt, new SplittableRandom(4));
        int[] positions = new int[PROMPT];
        for (int i = 0; i < PROMPT; i++) {
          positions[i] = i;
        }
        for (int s = 0; s < BATCH; s++) {
          assertThat(shared[s].length()).isEqualTo(PROMPT);
          int[] first =
              lm.forwardGreedy(
                  prompt,
                  new BatchLayout(new int[] {0, PROMPT}, positions),
                  new KvCache[] {own[s]},
                  new int[] {PROMPT - 1});
          if (s == 0) {
            assertThat(next[0]).as("the first sequence's greedy token").isEqualTo(first[0]);
          }
        }
        int[] starts = new int[BATCH + 1];
        int[] rows = new int[BATCH];
        int[] pos = new int[BATCH];
        for (int s = 0; s < BATCH; s++) {
          starts[s + 1] = s + 1;
          rows[s] = s;
          pos[s] = PROMPT;
        }
        BatchLayout step = new BatchLayout(starts, pos);
        float[] a = lm.forward(next, step, shared, rows);
        float[] b = lm.forward(next, step, own, rows);
        assertThat(a).as("decode logits over shared vs own prefills").containsExactly(b);
      } finally {
        for (int s = 0; s < BATCH; s++) {
          if (shared[s] != null) {
            shared[s].close();
          }
          if (own[s] != null) {
            own[s].close();
          }
        }
      }
    }
  }

  @Test
  void benchTimesTheOneSharedPromptsPrefillAndRefusesVerifyPasses() {
    try (CausalLm lm = CausalLm.load(RepoPaths.require("fixtures/golden/deepseek_v3_bf16"))) {
      PrintStream log = new PrintStream(new ByteArrayOutputStream());
      OneBatchBenchmark.Warmup w = new OneBatchBenchmark.Warmup(1, 2);
      List<OneBatchBenchmark.Result> rs =
          OneBatchBenchmark.run(lm, List.of(1, 4), PROMPT, 3, 7, w, List.of(), true, log);
      for (OneBatchBenchmark.Result r : rs) {
        assertThat(r.prefillTokensPerS() * r.prefillMs() / 1000.0)
            .as("prefill tokens at batch %d: the one shared prompt", r.batchSize())
            .isCloseTo(PROMPT, org.assertj.core.data.Offset.offset(1e-6));
        assertThat(r.decodeTokensPerS()).isPositive();
      }
      assertThatThrownBy(
              () -> OneBatchBenchmark.run(lm, List.of(2), PROMPT, 3, 7, w, List.of(2), true, log))
          .hasMessageContaining("--speculative-num-draft-tokens");
    }
  }
}
