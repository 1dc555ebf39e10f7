package dev.ringmaster.model.quant;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.backend.cpu.CpuOps;
import dev.ringmaster.backend.cpu.model.CausalLm;
import dev.ringmaster.model.config.QuantizationConfig;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.testing.GoldenFixture;
import dev.ringmaster.testing.RepoPaths;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The CPU engine on the quantized fixtures ({@code scripts/make_quant_fixtures.py}) against
 * transformers run on the same weights dequantized in f32: prefill logits within 1e-4 at every
 * position (the CPU dequantizes exactly as the reference, so only f32 summation order differs), the
 * greedy continuation token for token, and decode-with-cache equal to a full recompute.
 */
class QuantizedFixtureTest {
  static final float LOGIT_TOLERANCE = 1e-4f;

  static List<GoldenFixture> fixtures() {
    return List.of("deepseek_v3_source", "deepseek_v3_fp8", "deepseek_v3_nvfp4").stream()
        .map(n -> GoldenFixture.load(RepoPaths.require("fixtures/quantized/" + n)))
        .toList();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("fixtures")
  void prefillLogitsMatchTransformersOnDequantizedWeights(GoldenFixture f) {
    try (CausalLm model = CausalLm.load(f.dir())) {
      QuantizationConfig.Method want =
          f.name().endsWith("fp8")
              ? QuantizationConfig.Method.FP8_BLOCK
              : f.name().endsWith("nvfp4")
                  ? QuantizationConfig.Method.NVFP4
                  : QuantizationConfig.Method.NONE;
      assertThat(model.config().quantization().method()).isEqualTo(want);
      int vocab = model.config().vocabSize();
      float[] logits = model.forwardAll(f.promptIds(), model.newCache());
      float maxDiff = 0;
      for (int i = 0; i < f.promptIds().length; i++) {
        for (int j = 0; j < vocab; j++) {
          maxDiff = Math.max(maxDiff, Math.abs(logits[i * vocab + j] - f.logits()[i][j]));
        }
      }
      assertThat(maxDiff).as("max |logit diff|").isLessThanOrEqualTo(LOGIT_TOLERANCE);
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("fixtures")
  void greedyContinuationMatchesAndCacheEqualsRecompute(GoldenFixture f) {
    try (CausalLm model = CausalLm.load(f.dir())) {
      int vocab = model.config().vocabSize();
      KvCache cache = model.newCache();
      float[] logits = model.forwardAll(f.promptIds(), cache);
      int next = CpuOps.argmax(logits, (f.promptIds().length - 1) * vocab, vocab);
      int[] out = new int[f.greedyIds().length];
      int[] all = Arrays.copyOf(f.promptIds(), f.promptIds().length + out.length);
      for (int i = 0; i < out.length; i++) {
        out[i] = next;
        all[f.promptIds().length + i] = next;
        logits = model.forwardAll(new int[] {next}, cache);
        next = CpuOps.argmax(logits, 0, vocab);
      }
      assertThat(out).containsExactly(f.greedyIds());
      // The last decode step against a full recompute of the whole sequence.
      int len = all.length - 1;
      float[] full = model.forwardAll(Arrays.copyOf(all, all.length), model.newCache());
      for (int j = 0; j < vocab; j++) {
        assertThat(logits[j])
            .isCloseTo(full[len * vocab + j], org.assertj.core.data.Offset.offset(1e-4f));
      }
    }
  }
}
