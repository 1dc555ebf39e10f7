package dev.ringmaster.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import dev.ringmaster.engine.bench.OneBatchBenchmark;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The roofline lines and JSON that {@code bench one-batch} adds to a GPU run's results, from a
 * result node as a run on an H200 leaves it (the GPU run itself needs a GPU; the glue does not).
 */
class OneBatchRooflineCliTest {
  private static final ObjectMapper M =
      new ObjectMapper().setPropertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE);

  @Test
  void anH200RunGetsItsRooflines(@TempDir Path dir) throws Exception {
    Files.copy(
        Path.of(System.getProperty("user.dir"))
            .getParent()
            .resolve("configs/deepseek-v2-lite.json"),
        dir.resolve("config.json"));
    var node = M.createObjectNode();
    node.putObject("memory_plan").put("gpu", "NVIDIA H200, sm_90, 132 SMs, 139.8 GiB");
    node.put("allreduce", "auto");
    var results =
        List.of(
            new OneBatchBenchmark.Result(1, 512, 128, 22.4, 22857, 3.02, 331, java.util.Map.of()),
            new OneBatchBenchmark.Result(
                32, 512, 128, 541, 30296, 11.01, 2906, java.util.Map.of()));
    List<String> lines = BenchCommand.OneBatch.roofline(dir, node, M, results, "cuda", 1, 1);
    assertThat(lines).hasSize(5);
    assertThat(lines.get(0)).contains("h200 profile").contains("4.8 TB/s");
    // batch 1: ~4.9 GB per step, ~976 tok/s, 331 of it
    assertThat(lines.get(3)).matches("\\s+1\\s+4\\.9\\d\\s+9\\d\\d\\s+3\\d%.*");
    var rows = node.get("roofline").get("rows");
    assertThat(rows).hasSize(2);
    assertThat(rows.get(1).get("batch_size").asInt()).isEqualTo(32);
    assertThat(rows.get(1).get("decode_share").asDouble()).isBetween(0.4, 0.8);
  }

  @Test
  void otherDevicesGetNone(@TempDir Path dir) {
    var node = M.createObjectNode();
    node.putObject("memory_plan").put("gpu", "NVIDIA A10, sm_86, 72 SMs, 22 GiB");
    node.put("allreduce", "auto");
    assertThat(BenchCommand.OneBatch.roofline(dir, node, M, List.of(), "cuda", 1, 1)).isEmpty();
    var cpu = M.createObjectNode();
    assertThat(BenchCommand.OneBatch.roofline(dir, cpu, M, List.of(), "cpu", 1, 1)).isEmpty();
    assertThat(node.has("roofline")).isFalse();
  }

  @Test
  void aModelTheSimulatorCannotReadSaysSo(@TempDir Path dir) throws Exception {
    Files.writeString(dir.resolve("config.json"), "{\"model_type\": \"nonesuch\"}");
    var node = M.createObjectNode();
    node.putObject("memory_plan").put("gpu", "NVIDIA H200, sm_90, 132 SMs, 139.8 GiB");
    node.put("allreduce", "auto");
    var results =
        List.of(
            new OneBatchBenchmark.Result(1, 512, 128, 22.4, 22857, 3.02, 331, java.util.Map.of()));
    List<String> lines = BenchCommand.OneBatch.roofline(dir, node, M, results, "cuda", 1, 1);
    assertThat(lines).singleElement().asString().startsWith("roofline: not available");
  }
}
