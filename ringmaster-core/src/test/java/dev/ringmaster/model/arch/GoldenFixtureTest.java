package dev.ringmaster.model.arch;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.backend.cpu.model.CausalLm;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.testing.GoldenFixture;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The CPU engine against Hugging Face transformers on every golden fixture: prefill logits at every
 * position within 1e-4, the greedy continuation token for token, and decode-with-cache logits equal
 * to a full recompute.
 */
class GoldenFixtureTest {
  static final float LOGIT_TOLERANCE = 1e-4f;

  static List<GoldenFixture> fixtures() {
    return GoldenFixture.all();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("fixtures")
  void prefillLogitsMatchTransformers(GoldenFixture f) {
    try (CausalLm model = CausalLm.load(f.dir())) {
      int vocab = model.config().vocabSize();
      float[] logits = model.forwardAll(f.promptIds(), model.newCache());
      assertThat(f.logits()).hasNumberOfRows(f.promptIds().length);
      float maxDiff = 0;
      for (int i = 0; i < f.promptIds().length; i++) {
        for (int j = 0; j < vocab; j++) {
          maxDiff = Math.max(maxDiff, Math.abs(logits[i * vocab + j] - f.logits()[i][j]));
        }
      }
      assertThat(maxDiff)
          .as("max |logit diff| over all positions")
          .isLessThanOrEqualTo(LOGIT_TOLERANCE);
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("fixtures")
  void greedyContinuationMatchesTransformers(GoldenFixture f) {
    try (CausalLm model = CausalLm.load(f.dir())) {
      int vocab = model.config().vocabSize();
      KvCache cache = model.newCache();
      float[] logits = model.forwardAll(f.promptIds(), cache);
      int next = argmax(logits, (f.promptIds().length - 1) * vocab, vocab);
      int[] out = new int[f.greedyIds().length];
      for (int i = 0; i < out.length; i++) {
        out[i] = next;
        logits = model.forwardAll(new int[] {next}, cache);
        next = argmax(logits, 0, vocab);
      }
      assertThat(out).containsExactly(f.greedyIds());
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("fixtures")
  void decodeWithCacheEqualsFullRecompute(GoldenFixture f) {
    try (CausalLm model = CausalLm.load(f.dir())) {
      int vocab = model.config().vocabSize();
      int[] prompt = f.promptIds();
      int split = prompt.length / 2;
      KvCache cache = model.newCache();
      model.forwardAll(java.util.Arrays.copyOf(prompt, split), cache);
      float[] full = model.forwardAll(prompt, model.newCache());
      for (int i = split; i < prompt.length; i++) {
        float[] step = model.forwardAll(new int[] {prompt[i]}, cache);
        for (int j = 0; j < vocab; j++) {
          assertThat(step[j])
              .as("position %d token %d", i, j)
              .isCloseTo(full[i * vocab + j], org.assertj.core.data.Offset.offset(1e-4f));
        }
      }
    }
  }

  static int argmax(float[] x, int off, int n) {
    return dev.ringmaster.backend.cpu.CpuOps.argmax(x, off, n);
  }
}
