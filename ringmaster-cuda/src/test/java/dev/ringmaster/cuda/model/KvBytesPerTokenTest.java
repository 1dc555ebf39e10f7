package dev.ringmaster.cuda.model;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.model.config.ModelConfigParser;
import dev.ringmaster.runtime.KvCache;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * The GPU's paged cache stores one bf16 latent row per layer: a V2-Lite token costs 2 x 27 x (512 +
 * 64) bytes there, half of what the CPU's f32 caches take, so a pool of 3,355,328 tokens is 104.36
 * GB, as its memory plan says (not the 199,058.8 MiB the f32 count gives).
 */
class KvBytesPerTokenTest {
  private static Path repoFile(String rel) {
    Path p = Path.of("").toAbsolutePath();
    while (p != null && !Files.exists(p.resolve(rel))) {
      p = p.getParent();
    }
    if (p == null) {
      throw new IllegalStateException(rel + " not found above the working directory");
    }
    return p.resolve(rel);
  }

  @Test
  void theGpuPoolCountsBf16LatentRowsOfEveryLayer() {
    ModelConfig v2Lite = ModelConfigParser.parse(repoFile("configs/deepseek-v2-lite.json"));
    assertThat(BlockPool.bytesPerToken(v2Lite)).isEqualTo(2L * 27 * (512 + 64));
    assertThat(BlockPool.bytesPerToken(v2Lite) * 2).isEqualTo(KvCache.bytesPerToken(v2Lite));
    assertThat(3_355_328L * BlockPool.bytesPerToken(v2Lite) / 1e9).isBetween(104.36, 104.37);
  }

  @Test
  void sparseAttentionModelsAlsoCountBf16IndexerKeysOfTheLayersWithAnIndexer() {
    // GLM-5 shape: 78 layers of 576-value latent rows, every layer a full indexer of 128 dims.
    ModelConfig glm5 = ModelConfigParser.parse(repoFile("configs/glm5.json"));
    assertThat(BlockPool.indexerBytesPerToken(glm5)).isEqualTo(2L * 78 * 128);
    assertThat(BlockPool.bytesPerToken(glm5)).isEqualTo(2L * 78 * (512 + 64) + 2L * 78 * 128);
    // IndexCache: layers "full", "shared", "full": the shared layer stores no indexer key.
    ModelConfig shared =
        ModelConfigParser.parse(repoFile("fixtures/golden/glm_moe_dsa_shared/config.json"));
    assertThat(BlockPool.indexedLayers(shared)).containsExactly(true, false, true);
    assertThat(BlockPool.bytesPerToken(shared)).isEqualTo(2L * 3 * (16 + 8) + 2L * 2 * 16);
    assertThat(
            BlockPool.indexedLayers(
                ModelConfigParser.parse(repoFile("configs/deepseek-v2-lite.json"))))
        .isNull();
  }
}
