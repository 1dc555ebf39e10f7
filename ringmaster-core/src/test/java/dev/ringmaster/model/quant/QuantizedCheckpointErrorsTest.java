package dev.ringmaster.model.quant;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ringmaster.backend.cpu.model.CausalLm;
import dev.ringmaster.model.ModelLoadException;
import dev.ringmaster.model.arch.ParallelConfig;
import dev.ringmaster.model.arch.RankContext;
import dev.ringmaster.model.weights.SafetensorsWriter;
import dev.ringmaster.model.weights.TensorSpec;
import dev.ringmaster.model.weights.TensorView;
import dev.ringmaster.model.weights.WeightStore;
import dev.ringmaster.testing.RepoPaths;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Each malformed quantized checkpoint is refused with one message naming the file and tensor. */
class QuantizedCheckpointErrorsTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String EXPERT = "model.layers.1.mlp.experts.3.down_proj";

  @TempDir Path tmp;

  private Path copy(String fixture) throws IOException {
    Path src = RepoPaths.require("fixtures/quantized/" + fixture);
    Path dst = tmp.resolve(fixture);
    Files.createDirectories(dst);
    try (Stream<Path> files = Files.list(src)) {
      for (Path f : files.toList()) {
        Files.copy(f, dst.resolve(f.getFileName()));
      }
    }
    return dst;
  }

  private static void editConfig(Path dir, Consumer<ObjectNode> edit) throws IOException {
    ObjectNode cfg = (ObjectNode) JSON.readTree(Files.readString(dir.resolve("config.json")));
    edit.accept(cfg);
    Files.writeString(dir.resolve("config.json"), cfg.toString());
  }

  /** Rewrites model.safetensors without {@code drop}, or with {@code reshape} given shape [1]. */
  private static void rewrite(Path dir, String drop, String reshape) throws IOException {
    Path file = dir.resolve("model.safetensors");
    Path out = dir.resolve("model.new");
    try (WeightStore store = WeightStore.open(dir)) {
      List<TensorSpec> specs = new ArrayList<>();
      for (String n : store.names()) {
        TensorView t = store.get(n);
        if (!n.equals(drop)) {
          long[] shape = n.equals(reshape) ? new long[] {t.numel()} : t.shape();
          specs.add(new TensorSpec(n, shape, t.dtype(), TensorSpec.Init.NORMAL));
        }
      }
      SafetensorsWriter.write(
          out,
          specs,
          (spec, offset, buf) ->
              buf.put(
                  store.get(spec.name()).data().asSlice(offset, buf.remaining()).asByteBuffer()),
          n -> {});
    }
    Files.move(out, file, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
  }

  private static void assertRefused(Path dir, String... parts) {
    var a =
        assertThatThrownBy(() -> CausalLm.load(dir).close()).isInstanceOf(ModelLoadException.class);
    for (String p : parts) {
      a.hasMessageContaining(p);
    }
  }

  @Test
  void missingScale() throws IOException {
    Path d = copy("deepseek_v3_fp8");
    rewrite(d, EXPERT + ".weight_scale_inv", null);
    assertRefused(
        d, "model.safetensors", EXPERT + ".weight", EXPERT + ".weight_scale_inv", "missing");
    Path n = copy("deepseek_v3_nvfp4");
    rewrite(n, EXPERT + ".weight_scale_2", null);
    assertRefused(n, EXPERT + ".weight_scale_2", "missing");
  }

  @Test
  void wrongScaleShape() throws IOException {
    Path d = copy("deepseek_v3_nvfp4");
    rewrite(d, null, EXPERT + ".weight_scale");
    assertRefused(d, "model.safetensors", EXPERT + ".weight_scale", "expected F8_E4M3 [64, 1]");
  }

  @Test
  void unknownMethodAlgorithmOrBlockSize() throws IOException {
    Path d = copy("deepseek_v3_fp8");
    editConfig(d, c -> ((ObjectNode) c.get("quantization_config")).put("quant_method", "gptq"));
    assertRefused(d, "config.json", "quant_method 'gptq'");
    editConfig(
        d,
        c -> {
          ObjectNode q = (ObjectNode) c.get("quantization_config");
          q.put("quant_method", "fp8");
          q.putArray("weight_block_size").add(64).add(64);
        });
    assertRefused(d, "weight_block_size [64,64]", "only [128, 128]");
    Path n = copy("deepseek_v3_nvfp4");
    String hf = Files.readString(n.resolve("hf_quant_config.json"));
    Files.writeString(n.resolve("hf_quant_config.json"), hf.replace("\"NVFP4\"", "\"W4A8_AWQ\""));
    assertRefused(n, "hf_quant_config.json", "quant_algo 'W4A8_AWQ'");
  }

  @Test
  void excludedModuleThatIsQuantized() throws IOException {
    Path d = copy("deepseek_v3_nvfp4");
    editConfig(
        d,
        c ->
            ((com.fasterxml.jackson.databind.node.ArrayNode)
                    c.get("quantization_config").get("ignore"))
                .add("model.layers.1.mlp.experts"));
    assertRefused(
        d, "model.layers.1.mlp.experts.0.gate_proj.weight", "is quantized (U8)", "excluded");
  }

  @Test
  void quantizedWeightsWithoutQuantizationConfig() throws IOException {
    Path d = copy("deepseek_v3_fp8");
    editConfig(d, c -> c.remove("quantization_config"));
    assertRefused(d, "F8_E4M3", "no quantization_config");
  }

  @Test
  void tensorParallelSliceInsideAScaleBlock() throws IOException {
    Path d = copy("deepseek_v3_fp8");
    RankContext rank1 = new RankContext(1, ParallelConfig.tensor(2), null);
    assertThatThrownBy(() -> CausalLm.load(d, rank1).close())
        .isInstanceOf(ModelLoadException.class)
        .hasMessageContaining("inside an FP8 128x128 scale block")
        .hasMessageContaining("--tp-size");
  }
}
