package dev.ringmaster.model.arch;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.ringmaster.backend.cpu.model.CausalLm;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.testing.ReferenceJson;
import dev.ringmaster.testing.RepoPaths;
import java.io.IOException;
import java.nio.file.Path;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The embedded default model (and its draft) on the CPU engine against transformers' values
 * committed in {@code fixtures/default-model/reference.json.gz}: logits within 1e-3 (bf16 weights,
 * f32 compute) on a validation excerpt, and the greedy continuation of "We the people".
 */
class DefaultModelTest {
  static final float TOLERANCE = 1e-3f;

  private static JsonNode reference() throws IOException {
    return ReferenceJson.read(RepoPaths.require("fixtures/default-model/reference.json.gz"));
  }

  @ParameterizedTest
  @ValueSource(strings = {"main", "draft"})
  void logitsMatchTransformersOnAValidationExcerpt(String which) throws IOException {
    JsonNode ref = reference();
    JsonNode m = ref.get(which);
    Path dir = RepoPaths.require(ref.get(which + "_model").asText());
    int[] ids = ints(ref.get("input_ids"));
    try (CausalLm model = CausalLm.load(dir)) {
      int vocab = model.config().vocabSize();
      float[] logits = model.forwardAll(ids, model.newCache());
      JsonNode positions = m.get("full_logits_positions");
      float maxDiff = 0;
      for (int k = 0; k < positions.size(); k++) {
        int p = positions.get(k).asInt();
        float[] row = f32Row(m.get("logits_f32_le_base64").get(k).asText());
        assertThat(row).as("stored logits row %d", k).hasSize(vocab);
        for (int j = 0; j < vocab; j++) {
          maxDiff = Math.max(maxDiff, Math.abs(logits[p * vocab + j] - row[j]));
        }
      }
      assertThat(maxDiff)
          .as("max |logit diff| at the stored positions")
          .isLessThanOrEqualTo(TOLERANCE);
      for (int p = 0; p < ids.length; p++) {
        JsonNode topIds = m.get("top8_ids").get(p);
        JsonNode topLogits = m.get("top8_logits").get(p);
        for (int k = 0; k < topIds.size(); k++) {
          assertThat(logits[p * vocab + topIds.get(k).asInt()])
              .as("position %d, top-%d token", p, k + 1)
              .isCloseTo(
                  (float) topLogits.get(k).asDouble(),
                  org.assertj.core.data.Offset.offset(TOLERANCE));
        }
        assertThat(logSumExp(logits, p * vocab, vocab))
            .as("log-sum-exp at position %d", p)
            .isCloseTo(
                m.get("logsumexp").get(p).asDouble(), org.assertj.core.data.Offset.offset(1e-3));
      }
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"main", "draft"})
  void greedyContinuationMatchesTransformers(String which) throws IOException {
    JsonNode ref = reference();
    JsonNode g = ref.get(which).get("greedy");
    Path dir = RepoPaths.require(ref.get(which + "_model").asText());
    try (CausalLm model = CausalLm.load(dir)) {
      int vocab = model.config().vocabSize();
      KvCache cache = model.newCache();
      float[] logits = model.forwardAll(ints(g.get("prompt_ids")), cache);
      int next = GoldenFixtureTest.argmax(logits, (g.get("prompt_ids").size() - 1) * vocab, vocab);
      int[] expected = ints(g.get("generated_ids"));
      int[] out = new int[expected.length];
      for (int i = 0; i < out.length; i++) {
        out[i] = next;
        logits = model.forwardAll(new int[] {next}, cache);
        next = GoldenFixtureTest.argmax(logits, 0, vocab);
      }
      assertThat(out).containsExactly(expected);
    }
  }

  private static double logSumExp(float[] x, int off, int n) {
    double max = Double.NEGATIVE_INFINITY;
    for (int i = 0; i < n; i++) {
      max = Math.max(max, x[off + i]);
    }
    double s = 0;
    for (int i = 0; i < n; i++) {
      s += Math.exp(x[off + i] - max);
    }
    return max + Math.log(s);
  }

  private static int[] ints(JsonNode n) {
    int[] out = new int[n.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = n.get(i).asInt();
    }
    return out;
  }

  /** A logits row stored as the base64 of its little-endian f32 bytes. */
  private static float[] f32Row(String base64) {
    java.nio.FloatBuffer b =
        java.nio.ByteBuffer.wrap(java.util.Base64.getDecoder().decode(base64))
            .order(java.nio.ByteOrder.LITTLE_ENDIAN)
            .asFloatBuffer();
    float[] out = new float[b.remaining()];
    b.get(out);
    return out;
  }
}
