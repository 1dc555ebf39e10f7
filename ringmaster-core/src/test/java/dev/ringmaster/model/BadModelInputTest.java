package dev.ringmaster.model;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ringmaster.backend.cpu.model.CausalLm;
import dev.ringmaster.testing.RepoPaths;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Every way a model directory can be broken ends in one clear message naming file and tensor. */
class BadModelInputTest {
  @TempDir Path tmp;

  private Path copyFixture(String name) throws IOException {
    Path src = RepoPaths.require("fixtures/golden/" + name);
    Path dst = tmp.resolve(name);
    Files.createDirectories(dst);
    try (Stream<Path> files = Files.list(src)) {
      for (Path f : files.toList()) {
        Files.copy(f, dst.resolve(f.getFileName()));
      }
    }
    return dst;
  }

  private static void editConfig(Path dir, java.util.function.Consumer<ObjectNode> edit)
      throws IOException {
    ObjectMapper m = new ObjectMapper();
    ObjectNode cfg = (ObjectNode) m.readTree(Files.readString(dir.resolve("config.json")));
    edit.accept(cfg);
    Files.writeString(dir.resolve("config.json"), m.writeValueAsString(cfg));
  }

  @Test
  void unknownModelTypeNamesTheTypeAndTheSupportedOnes() throws IOException {
    Path dir = copyFixture("deepseek_v3_basic");
    editConfig(dir, c -> c.put("model_type", "llama4_moe"));
    assertThatThrownBy(() -> CausalLm.load(dir))
        .isInstanceOf(ModelLoadException.class)
        .hasMessageContaining("config.json")
        .hasMessageContaining("model_type 'llama4_moe' is not supported")
        .hasMessageContaining("deepseek_v3");
  }

  @Test
  void missingConfigSaysWhatADirectoryNeeds() {
    assertThatThrownBy(() -> CausalLm.load(tmp))
        .isInstanceOf(ModelLoadException.class)
        .hasMessageContaining("config.json: not found");
  }

  @Test
  void malformedConfigJson() throws IOException {
    Path dir = copyFixture("qwen3_moe_basic");
    Files.writeString(dir.resolve("config.json"), "{\"model_type\": \"qwen3_moe\", ");
    assertThatThrownBy(() -> CausalLm.load(dir))
        .isInstanceOf(ModelLoadException.class)
        .hasMessageContaining("config.json: not valid JSON");
  }

  @Test
  void missingTensorIsNamed() throws IOException {
    Path dir = copyFixture("deepseek_v3_basic");
    editConfig(dir, c -> c.put("num_hidden_layers", c.get("num_hidden_layers").asInt() + 1));
    assertThatThrownBy(() -> CausalLm.load(dir))
        .isInstanceOf(ModelLoadException.class)
        .hasMessageContaining("is missing from the checkpoint")
        .hasMessageMatching("(?s).*tensor 'model\\.layers\\.\\d+\\..*");
  }

  @Test
  void wrongShapeNamesFileTensorAndBothShapes() throws IOException {
    Path dir = copyFixture("qwen3_moe_basic");
    editConfig(dir, c -> c.put("vocab_size", c.get("vocab_size").asInt() + 7));
    assertThatThrownBy(() -> CausalLm.load(dir))
        .isInstanceOf(ModelLoadException.class)
        .hasMessageContaining("model.safetensors")
        .hasMessageContaining("tensor 'model.embed_tokens.weight' has shape")
        .hasMessageContaining("expected");
  }

  @Test
  void truncatedFileNamesTheFirstTensorPastTheEnd() throws IOException {
    Path dir = copyFixture("deepseek_v2_basic");
    Path f = dir.resolve("model.safetensors");
    try (FileChannel ch = FileChannel.open(f, StandardOpenOption.WRITE)) {
      ch.truncate(ch.size() - 1000);
    }
    assertThatThrownBy(() -> CausalLm.load(dir))
        .isInstanceOf(ModelLoadException.class)
        .hasMessageContaining("model.safetensors: truncated file: tensor '")
        .hasMessageContaining("re-copy");
  }

  @Test
  void fileShorterThanItsHeader() throws IOException {
    Path dir = copyFixture("deepseek_v2_basic");
    Path f = dir.resolve("model.safetensors");
    try (FileChannel ch = FileChannel.open(f, StandardOpenOption.WRITE)) {
      ch.truncate(100);
    }
    assertThatThrownBy(() -> CausalLm.load(dir))
        .isInstanceOf(ModelLoadException.class)
        .hasMessageContaining("model.safetensors: not a safetensors file or truncated");
  }

  @Test
  void unsupportedTensorDtype() throws IOException {
    Path dir = copyFixture("deepseek_v2_basic");
    byte[] header =
        "{\"model.embed_tokens.weight\":{\"dtype\":\"F8_E5M2\",\"shape\":[2],\"data_offsets\":[0,2]}}"
            .getBytes(StandardCharsets.UTF_8);
    ByteBuffer b = ByteBuffer.allocate(8 + header.length + 2).order(ByteOrder.LITTLE_ENDIAN);
    b.putLong(header.length).put(header).put((byte) 0).put((byte) 0);
    Files.write(dir.resolve("model.safetensors"), b.array());
    assertThatThrownBy(() -> CausalLm.load(dir))
        .isInstanceOf(ModelLoadException.class)
        .hasMessageContaining("unsupported dtype F8_E5M2");
  }

  @Test
  void missingWeightsFile() throws IOException {
    Path dir = copyFixture("deepseek_v2_basic");
    Files.delete(dir.resolve("model.safetensors"));
    assertThatThrownBy(() -> CausalLm.load(dir))
        .isInstanceOf(ModelLoadException.class)
        .hasMessageContaining("no model.safetensors or model.safetensors.index.json");
  }

  @Test
  void shardListedInIndexButMissing() throws IOException {
    Path dir = copyFixture("deepseek_v2_sharded");
    try (Stream<Path> files = Files.list(dir)) {
      Path shard =
          files.filter(p -> p.getFileName().toString().startsWith("model-0000")).findFirst().get();
      Files.delete(shard);
    }
    assertThatThrownBy(() -> CausalLm.load(dir))
        .isInstanceOf(ModelLoadException.class)
        .hasMessageContaining("weights file not found");
  }

  @Test
  void fieldOfTheWrongType() throws IOException {
    Path dir = copyFixture("deepseek_v3_basic");
    editConfig(dir, c -> c.put("hidden_size", "big"));
    assertThatThrownBy(() -> CausalLm.load(dir))
        .isInstanceOf(ModelLoadException.class)
        .hasMessageContaining("field 'hidden_size' must be an integer");
  }
}
