package dev.ringmaster.sim.model;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.sim.Configs;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * For every model the engine runs, the simulator's weights are the engine loader's requests, and
 * the simulator's own table (kept for shapes the engine does not load) agrees with them: the same
 * parameters per role and per split, layer by layer.
 */
class WeightInventoryLoaderTest {
  static Stream<String> engineModels() throws IOException {
    Stream<String> configs =
        Stream.of("deepseek-v2-lite", "deepseek-v2", "deepseek-v3", "qwen3-30b-a3b");
    Path golden = repo().resolve("fixtures/golden");
    List<String> fixtures;
    try (Stream<Path> dirs = Files.list(golden)) {
      fixtures =
          dirs.filter(d -> Files.exists(d.resolve("config.json")))
              .map(d -> d.resolve("config.json").toString())
              .sorted()
              .toList();
    }
    return Stream.concat(configs, fixtures.stream());
  }

  private static Path repo() {
    Path p = Path.of("").toAbsolutePath();
    while (!Files.isDirectory(p.resolve(".ci"))) {
      p = p.getParent();
    }
    return p;
  }

  private static ModelShape shape(String name) {
    return name.endsWith(".json") ? ModelShapes.load(Path.of(name)) : Configs.load(name);
  }

  @ParameterizedTest
  @MethodSource("engineModels")
  void theLoaderNamesTheWeightsAndTheTableAgrees(String name) {
    WeightInventory inv = new WeightInventory(shape(name));
    assertThat(inv.fromEngineLoader()).as("%s: weights from the engine's loader", name).isTrue();
    assertThat(byRoleAndSplit(inv.all())).as(name).isEqualTo(byRoleAndSplit(inv.tableAll()));
  }

  @Test
  void shapesTheEngineDoesNotLoadKeepTheTable() {
    ModelShape v3 = Configs.load("deepseek-v3");
    ModelShape asTable =
        new ModelShape(
            v3.modelType(),
            v3.vocabSize(),
            v3.hiddenSize(),
            v3.denseIntermediateSize(),
            v3.numLayers(),
            v3.attention(),
            v3.moe(),
            v3.moeLayers(),
            v3.indexer(),
            v3.tieWordEmbeddings(),
            v3.numMtpLayers());
    WeightInventory table = new WeightInventory(asTable);
    assertThat(table.fromEngineLoader()).isFalse();
    assertThat(table.totalParameters()).isEqualTo(new WeightInventory(v3).totalParameters());
  }

  /**
   * Parameters per (role, split): the terms the simulator's timings and memory plan read. Linear
   * layers' biases are left out: the table has none (no published model of these families has them;
   * two golden fixtures do). Norm biases (the DSA indexer's LayerNorm) count.
   */
  private static Map<String, Long> byRoleAndSplit(List<Weight> ws) {
    Map<String, Long> out = new TreeMap<>();
    for (Weight w : ws) {
      if (w.name().endsWith(".bias") && !w.name().contains("norm")) {
        continue;
      }
      out.merge(w.role() + "/" + w.split(), w.parameters(), Long::sum);
    }
    return out;
  }
}
