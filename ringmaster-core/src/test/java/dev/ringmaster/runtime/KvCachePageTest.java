package dev.ringmaster.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringmaster.backend.cpu.model.CausalLm;
import dev.ringmaster.backend.cpu.model.ParallelCausalLm;
import dev.ringmaster.model.arch.ParallelConfig;
import dev.ringmaster.parallel.AllReduceAlgorithm;
import dev.ringmaster.testing.RepoPaths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Retained pages keep their contents after the source cache is closed, and a cache that starts with
 * attached pages holds the same rows and continues exactly like the cache that computed them (FP8
 * indexer keys too: codes and scales).
 */
class KvCachePageTest {
  private static final int PAGE = 4;
  private static final int[] PROMPT = {5, 9, 13, 2, 44, 7, 7, 31, 8, 100, 3, 17, 60};

  @ParameterizedTest
  @ValueSource(
      strings = {
        "fixtures/golden/deepseek_v3_basic",
        "fixtures/golden/qwen3_moe_basic",
        "fixtures/golden/deepseek_v32_dsa"
      })
  void heapPagesAttachWithEqualRowsAndLogits(String fixture) {
    try (CausalLm lm = CausalLm.load(RepoPaths.require(fixture))) {
      check(lm, false);
    }
  }

  @Test
  void pagesOfFp8IndexerKeysAttachWithEqualCodesScalesAndLogits() {
    KernelTuning fp8 = KernelTuning.defaults().with("indexer-cache-dtype", "fp8_e4m3");
    try (CausalLm lm = CausalLm.load(RepoPaths.require("fixtures/golden/deepseek_v32_dsa"), fp8)) {
      assertThat(lm.newCache().indexerKeys().fp8()).isTrue();
      check(lm, false);
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"fixtures/golden/deepseek_v3_basic", "fixtures/golden/qwen3_moe_basic"})
  void shardedPagesAttachPerShard(String fixture) {
    try (ParallelCausalLm lm =
        ParallelCausalLm.load(
            RepoPaths.require(fixture), ParallelConfig.tensor(2), AllReduceAlgorithm.RING)) {
      check(lm, true);
    }
  }

  private static void check(LanguageModel lm, boolean sharded) {
    int cachedPages = 2;
    int cut = cachedPages * PAGE;
    KvCache source = lm.newCache();
    float[] full = lm.forwardAll(PROMPT, source);
    List<KvCache.Page> pages = new ArrayList<>();
    for (int p = 0; p < cachedPages; p++) {
      pages.add(source.retainPage(p, PAGE));
    }
    KvCache reference = lm.newCache();
    lm.forwardAll(Arrays.copyOf(PROMPT, cut), reference);
    source.setLength(0); // overwrite the source rows: the pages must not change
    lm.forwardAll(new int[] {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, source);
    source.close();

    KvCache attached = lm.newCache();
    attached.attachPages(pages, PAGE);
    assertThat(attached.length()).isEqualTo(cut);
    int shards = sharded ? 2 : 1;
    for (int r = 0; r < shards; r++) {
      KvCache got = attached.shard(r);
      KvCache want = reference.shard(r);
      for (int l = 0; l < lm.config().numLayers(); l++) {
        assertThat(Arrays.copyOf(got.a(l), cut * got.widthA()))
            .as("layer %d a", l)
            .containsExactly(Arrays.copyOf(want.a(l), cut * want.widthA()));
        assertThat(Arrays.copyOf(got.b(l), cut * got.widthB()))
            .containsExactly(Arrays.copyOf(want.b(l), cut * want.widthB()));
        if (got.widthC() > 0 && lm.config().sparseAttention().hasIndexer(l)) {
          IndexerKeyCache g = got.indexerKeys();
          IndexerKeyCache w = want.indexerKeys();
          if (g.fp8()) {
            assertThat(Arrays.copyOf(g.codes(l), cut * g.dim()))
                .containsExactly(Arrays.copyOf(w.codes(l), cut * w.dim()));
            assertThat(Arrays.copyOf(g.scales(l), cut))
                .containsExactly(Arrays.copyOf(w.scales(l), cut));
          } else {
            assertThat(Arrays.copyOf(got.c(l), cut * got.widthC()))
                .containsExactly(Arrays.copyOf(want.c(l), cut * want.widthC()));
          }
        }
      }
    }
    float[] rest = lm.forwardAll(Arrays.copyOfRange(PROMPT, cut, PROMPT.length), attached);
    int vocab = lm.config().vocabSize();
    assertThat(rest).containsExactly(Arrays.copyOfRange(full, cut * vocab, full.length));

    assertThatThrownBy(() -> attached.attachPages(pages, PAGE))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("empty cache");
    assertThatThrownBy(() -> attached.retainPage(PROMPT.length / PAGE, PAGE))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("not stored");
    pages.forEach(KvCache.Page::close);
    attached.close();
    reference.close();
  }
}
