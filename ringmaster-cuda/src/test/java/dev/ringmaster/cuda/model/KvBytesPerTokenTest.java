package dev.ringmaster.cuda.model;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.model.config.IndexerCacheDtype;
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

  @Test
  void fp8IndexerKeysCountTheirCodesAndOneScalePerTokenAndIndexedLayer() {
    // GLM-5 shape: on each of the 78 indexed layers 128 one-byte codes and a 4-byte f32 scale,
    // 10,296 bytes a token against 19,968 in bf16 (and 39,936 in the CPU's f32).
    ModelConfig glm5 =
        ModelConfigParser.parse(repoFile("configs/glm5.json"))
            .withIndexerCache(IndexerCacheDtype.FP8_E4M3);
    assertThat(BlockPool.indexerBytesPerToken(glm5)).isEqualTo(78L * (128 + 4)).isEqualTo(10_296);
    assertThat(BlockPool.bytesPerToken(glm5)).isEqualTo(2L * 78 * (512 + 64) + 10_296);
    assertThat(MemoryPlan.kvBytesPerToken(glm5)).isEqualTo(BlockPool.bytesPerToken(glm5));
    assertThat(KvCache.bytesPerToken(glm5)).isEqualTo(4L * 78 * (512 + 64) + 10_296);
    // A million cached tokens: 10.30 GB of indexer keys instead of 19.97 GB.
    assertThat(1_000_000L * BlockPool.indexerBytesPerToken(glm5) / 1e9).isEqualTo(10.296);
    // IndexCache: only the two full layers of three store keys, (16 + 4) bytes each.
    ModelConfig shared =
        ModelConfigParser.parse(repoFile("fixtures/golden/glm_moe_dsa_shared/config.json"))
            .withIndexerCache(IndexerCacheDtype.FP8_E4M3);
    assertThat(BlockPool.bytesPerToken(shared)).isEqualTo(2L * 3 * (16 + 8) + 2L * (16 + 4));
    assertThat(KvCache.bytesPerToken(shared)).isEqualTo(4L * 3 * (16 + 8) + 2L * (16 + 4));
  }

  @Test
  void gqaModelsCountKeysAndValuesOfEveryKvHead() {
    ModelConfig qwen =
        ModelConfigParser.parse(repoFile("fixtures/golden/qwen3_moe_basic/config.json"));
    assertThat(MemoryPlan.kvBytesPerToken(qwen))
        .isEqualTo(2L * qwen.numLayers() * 2 * qwen.numKvHeads() * qwen.headDim());
  }

  @Test
  void theMemoryPlanNamesHowTheIndexerKeysAreStored() {
    MemoryPlan plan =
        new MemoryPlan(
            "H200",
            141_000_000_000L,
            0.9,
            7_000_000_000L,
            2_000_000_000L,
            500_000_000L,
            java.util.Map.of(1, 500_000_000L),
            30_000_000_000L,
            10_296_000_000L,
            "fp8_e4m3",
            1_000_000L,
            64,
            1_000_000_000L);
    assertThat(plan.describe()).contains("of which indexer keys    10.30 GB (fp8_e4m3)");
    assertThat(plan.toJson())
        .containsEntry("kv_cache_indexer_gb", 10.296)
        .containsEntry("kv_cache_indexer_dtype", "fp8_e4m3");
  }
}
