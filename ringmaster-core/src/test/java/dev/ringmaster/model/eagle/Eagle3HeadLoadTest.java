package dev.ringmaster.model.eagle;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ringmaster.backend.DType;
import dev.ringmaster.backend.cpu.model.CausalLm;
import dev.ringmaster.model.ModelLoadException;
import dev.ringmaster.model.random.RandomEagle3HeadWriter;
import dev.ringmaster.model.weights.TensorSpec;
import dev.ringmaster.runtime.DraftHead;
import dev.ringmaster.runtime.HiddenCapture;
import dev.ringmaster.testing.RepoPaths;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * EAGLE-3 heads that do not fit are refused with an error naming the tensor or field: a missing
 * tensor, wrong shapes, a {@code d2t} of the wrong size, out of range or not one-to-one, no LM head
 * for a draft vocabulary, another architecture, another width, a layer the target lacks. The
 * layout's variants load: a {@code model.} prefix, the default capture.
 */
class Eagle3HeadLoadTest {
  @TempDir Path tmp;
  private static CausalLm target;

  @BeforeAll
  static void load() {
    target = CausalLm.load(RepoPaths.require("fixtures/golden/deepseek_v3_basic"));
  }

  @AfterAll
  static void close() {
    target.close();
  }

  private ObjectNode config() {
    return RandomEagle3HeadWriter.config(target.config(), 160, List.of(0, 1, 2));
  }

  private Eagle3HeadConfig parsed(ObjectNode cfg) {
    return Eagle3HeadConfig.of(cfg, "test");
  }

  private long[] d2t(int n) {
    int[] hot = RandomEagle3HeadWriter.hotTokenIds(target.config().vocabSize(), 160);
    long[] d = new long[n];
    for (int i = 0; i < n; i++) {
      d[i] = i < hot.length ? hot[i] - i : 0;
    }
    return d;
  }

  /** Writes a head whose tensor list {@code edit} changed, and loads it. */
  private DraftHead load(ObjectNode cfg, UnaryOperator<List<TensorSpec>> edit, long[] d2t)
      throws Exception {
    Path dir = tmp.resolve("head");
    List<TensorSpec> specs = new ArrayList<>(Eagle3Tensors.specs(parsed(cfg), DType.BF16));
    RandomEagle3HeadWriter.write(cfg, dir, edit.apply(specs), d2t, 3);
    return target.loadEagle3Head(dir);
  }

  private static List<TensorSpec> replace(List<TensorSpec> specs, String name, long... shape) {
    List<TensorSpec> out = new ArrayList<>();
    for (TensorSpec s : specs) {
      out.add(s.name().equals(name) ? new TensorSpec(name, shape, s.dtype(), s.init()) : s);
    }
    return out;
  }

  @Test
  void aWellFormedHeadLoadsAndReadsTheNamedLayers() throws Exception {
    try (DraftHead head = load(config(), s -> s, d2t(160))) {
      assertThat(head.capture()).isEqualTo(HiddenCapture.ofLayerInputs(1, 2, 3));
      assertThat(head.targetWidth()).isEqualTo(3 * 64);
      assertThat(head.chainWidth()).isEqualTo(64);
    }
  }

  @Test
  void tensorsWithAModelPrefixLoad() throws Exception {
    UnaryOperator<List<TensorSpec>> prefixed =
        specs ->
            specs.stream()
                .map(
                    s ->
                        s.name().equals("lm_head.weight") || s.name().equals("d2t")
                            ? s
                            : new TensorSpec("model." + s.name(), s.shape(), s.dtype(), s.init()))
                .toList();
    try (DraftHead head = load(config(), prefixed, d2t(160))) {
      assertThat(head.targetWidth()).isEqualTo(192);
    }
  }

  @Test
  void theDefaultCaptureIsSglangs() {
    ObjectNode cfg = RandomEagle3HeadWriter.config(target.config(), 160, null);
    assertThat(parsed(cfg).captureFor(61)).isEqualTo(HiddenCapture.ofLayerInputs(2, 30, 58));
    assertThat(parsed(cfg).captureFor(3)).isEqualTo(HiddenCapture.ofLayerInputs(2, 1, 0));
    assertThatThrownBy(() -> parsed(cfg).captureFor(2))
        .hasMessageContaining("eagle_aux_hidden_state_layer_ids");
  }

  @Test
  void aMissingTensorIsNamed() {
    assertThatThrownBy(
            () ->
                load(
                    config(),
                    s ->
                        s.stream()
                            .filter(t -> !t.name().equals("midlayer.hidden_norm.weight"))
                            .toList(),
                    d2t(160)))
        .isInstanceOf(ModelLoadException.class)
        .hasMessageContaining("'midlayer.hidden_norm.weight' is missing");
    assertThatThrownBy(
            () ->
                load(
                    config(),
                    s -> s.stream().filter(t -> !t.name().equals("fc.weight")).toList(),
                    d2t(160)))
        .hasMessageContaining("'fc.weight' is missing: not an EAGLE-3 head checkpoint");
    assertThatThrownBy(
            () ->
                load(
                    config(),
                    s -> s.stream().filter(t -> !t.name().equals("lm_head.weight")).toList(),
                    d2t(160)))
        .hasMessageContaining("'lm_head.weight' is missing");
    assertThatThrownBy(
            () ->
                load(
                    config(),
                    s -> s.stream().filter(t -> !t.name().equals("d2t")).toList(),
                    d2t(160)))
        .hasMessageContaining("'d2t' is missing");
  }

  @Test
  void wrongShapesAreNamed() {
    assertThatThrownBy(() -> load(config(), s -> replace(s, "fc.weight", 64, 128), d2t(160)))
        .isInstanceOf(ModelLoadException.class)
        .hasMessageContaining("'fc.weight' has shape [64, 128], expected [64, 192]");
    assertThatThrownBy(
            () ->
                load(
                    config(),
                    s -> replace(s, "midlayer.self_attn.q_proj.weight", 64, 64),
                    d2t(160)))
        .hasMessageContaining(
            "'midlayer.self_attn.q_proj.weight' has shape [64, 64], expected [64, 128]");
    assertThatThrownBy(() -> load(config(), s -> replace(s, "lm_head.weight", 320, 64), d2t(160)))
        .hasMessageContaining("'lm_head.weight' has shape [320, 64], expected [160, 64]");
  }

  @Test
  void aMalformedD2tIsRefused() {
    assertThatThrownBy(() -> load(config(), s -> replace(s, "d2t", 159), d2t(159)))
        .isInstanceOf(ModelLoadException.class)
        .hasMessageContaining("'d2t' has shape [159], expected [160]");
    long[] far = d2t(160);
    far[159] = 1000;
    assertThatThrownBy(() -> load(config(), s -> s, far))
        .hasMessageContaining("d2t maps draft token 159 to 1159, outside the target's vocabulary");
    long[] twice = d2t(160);
    twice[1] = twice[0] - 1; // draft 1 -> the target id of draft 0
    assertThatThrownBy(() -> load(config(), s -> s, twice))
        .hasMessageContaining("maps two draft tokens to target token 0");
  }

  @Test
  void aConfigThatDoesNotFitTheTargetIsRefused() {
    ObjectNode arch = config();
    arch.putArray("architectures").add("LlamaForCausalLM");
    assertThatThrownBy(() -> load(arch, s -> s, d2t(160)))
        .hasMessageContaining("expected LlamaForCausalLMEagle3");
    ObjectNode wide = config();
    wide.put("hidden_size", 128).put("head_dim", 32);
    assertThatThrownBy(() -> load(wide, s -> s, d2t(160)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("hidden_size 128 differs from the target's 64");
    ObjectNode far = RandomEagle3HeadWriter.config(target.config(), 160, List.of(0, 1, 7));
    assertThatThrownBy(() -> load(far, s -> s, d2t(160)))
        .hasMessageContaining("names layer 7 but the target has layers 0..2");
    ObjectNode big = config();
    big.put("draft_vocab_size", 400);
    assertThatThrownBy(() -> parsed(big))
        .hasMessageContaining("draft_vocab_size 400 must be between 1 and vocab_size 320");
  }
}
