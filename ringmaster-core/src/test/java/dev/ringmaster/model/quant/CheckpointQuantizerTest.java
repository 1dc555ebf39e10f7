package dev.ringmaster.model.quant;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ringmaster.backend.cpu.model.CausalLm;
import dev.ringmaster.model.ModelLoadException;
import dev.ringmaster.model.weights.TensorView;
import dev.ringmaster.model.weights.WeightStore;
import dev.ringmaster.testing.GoldenFixture;
import dev.ringmaster.testing.RepoPaths;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code model quantize} against the fixtures that {@code scripts/make_quant_fixtures.py} quantized
 * independently from the same bf16 source: the same tensors byte for byte (names, dtypes, shapes,
 * codes and scales), the same quantization fields in config.json and hf_quant_config.json, and the
 * output reloading to the fixtures' reference logits.
 */
class CheckpointQuantizerTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @TempDir Path tmp;

  private static Path fixture(String name) {
    return RepoPaths.require("fixtures/quantized/" + name);
  }

  @Test
  void fp8OutputEqualsTheReferenceQuantizerAndReloads() throws Exception {
    Path out = tmp.resolve("fp8");
    CheckpointQuantizer.Result r =
        new CheckpointQuantizer(QuantFormat.FP8, List.of()).run(fixture("deepseek_v3_source"), out);
    assertThat(r.quantized()).contains("model.layers.1.self_attn.kv_b_proj");
    assertThat(r.kept()).containsExactly("model.layers.1.mlp.gate");
    assertSameCheckpoint(out, fixture("deepseek_v3_fp8"));
    assertReloadsToReference(out, fixture("deepseek_v3_fp8"));
  }

  /**
   * Modules are quantized ahead on a pool: one thread and several write the same file, byte for
   * byte (with three threads the six-module window runs well ahead of the writer on this fixture).
   */
  @Test
  void theFileDoesNotDependOnTheThreadCount() throws Exception {
    Path one = tmp.resolve("one");
    Path three = tmp.resolve("three");
    new CheckpointQuantizer(QuantFormat.FP8, List.of(), 1).run(fixture("deepseek_v3_source"), one);
    new CheckpointQuantizer(QuantFormat.FP8, List.of(), 3)
        .run(fixture("deepseek_v3_source"), three);
    assertThat(Files.readAllBytes(three.resolve("model.safetensors")))
        .isEqualTo(Files.readAllBytes(one.resolve("model.safetensors")));
    assertThatThrownBy(() -> new CheckpointQuantizer(QuantFormat.FP8, List.of(), 0))
        .hasMessageContaining("at least 1");
  }

  @Test
  void nvfp4WithExclusionsEqualsTheReferenceQuantizerAndReloads() throws Exception {
    Path out = tmp.resolve("nvfp4");
    new CheckpointQuantizer(QuantFormat.NVFP4, List.of("*self_attn*", "model.layers.0.mlp"))
        .run(fixture("deepseek_v3_source"), out);
    assertSameCheckpoint(out, fixture("deepseek_v3_nvfp4"));
    JsonNode hf = JSON.readTree(Files.readString(out.resolve("hf_quant_config.json")));
    JsonNode want =
        JSON.readTree(
            Files.readString(fixture("deepseek_v3_nvfp4").resolve("hf_quant_config.json")));
    assertThat(hf).isEqualTo(want);
    assertThat(hf.path("quantization").path("exclude_modules").toString())
        .contains("model.layers.0.self_attn.q_a_proj")
        .doesNotContain("experts");
    assertReloadsToReference(out, fixture("deepseek_v3_nvfp4"));
  }

  @Test
  void refusesAQuantizedSourceAndModulesNvfp4CannotHold() {
    assertThatThrownBy(
            () ->
                new CheckpointQuantizer(QuantFormat.NVFP4, List.of())
                    .run(fixture("deepseek_v3_fp8"), tmp.resolve("x")))
        .isInstanceOf(ModelLoadException.class)
        .hasMessageContaining("already quantized");
    // deepseek_v3_basic's experts have 8 intermediate features: down_proj cannot be NVFP4.
    assertThatThrownBy(
            () ->
                new CheckpointQuantizer(QuantFormat.NVFP4, List.of())
                    .run(RepoPaths.require("fixtures/golden/deepseek_v3_basic"), tmp.resolve("y")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("not a multiple of 16")
        .hasMessageContaining("--exclude");
  }

  private static void assertSameCheckpoint(Path got, Path want) throws Exception {
    JsonNode g = JSON.readTree(Files.readString(got.resolve("config.json")));
    JsonNode w = JSON.readTree(Files.readString(want.resolve("config.json")));
    assertThat(g.path("quantization_config")).isEqualTo(w.path("quantization_config"));
    try (WeightStore a = WeightStore.open(got);
        WeightStore b = WeightStore.open(want)) {
      assertThat(a.names()).isEqualTo(b.names());
      for (String name : a.names()) {
        TensorView x = a.get(name);
        TensorView y = b.get(name);
        assertThat(x.dtype()).as(name).isEqualTo(y.dtype());
        assertThat(x.shape()).as(name).isEqualTo(y.shape());
        assertThat(x.data().mismatch(y.data())).as(name + " bytes").isEqualTo(-1L);
      }
    }
  }

  private static void assertReloadsToReference(Path dir, Path fixture) {
    GoldenFixture f = GoldenFixture.load(fixture);
    try (CausalLm model = CausalLm.load(dir)) {
      int vocab = model.config().vocabSize();
      float[] logits = model.forwardAll(f.promptIds(), model.newCache());
      int last = f.promptIds().length - 1;
      for (int j = 0; j < vocab; j++) {
        assertThat(logits[last * vocab + j])
            .isCloseTo(f.logits()[last][j], org.assertj.core.data.Offset.offset(1e-4f));
      }
    }
  }
}
