package dev.ringmaster.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Caches made with an allocator take their positions' block ids from it, their pages are references
 * on those blocks, and a sharded cache takes one set of ids for all its shards.
 */
class KvCacheBlocksTest {
  private static final int PAGE = 4;

  private static void write(KvCache c, int tokens, float base) {
    c.ensureCapacity(tokens);
    for (int p = 0; p < tokens; p++) {
      c.a(0)[p] = base + p;
      c.b(0)[p] = -(base + p);
    }
    c.setLength(tokens);
  }

  @Test
  void heapPagesAreBlockReferencesAndCarryTheirRows() {
    KvBlockAllocator blocks = new KvBlockAllocator(PAGE, 8);
    KvCache source = new KvCache(1, 1, 1, blocks);
    source.reserve(10);
    assertThat(source.blockCount()).isEqualTo(3);
    assertThat(blocks.used()).isEqualTo(3);
    write(source, 10, 100);
    KvCache.Page p0 = source.retainPage(0, PAGE);
    KvCache.Page p1 = source.retainPage(1, PAGE);
    int shared = source.blockTable().id(1);
    assertThat(blocks.references(shared)).isEqualTo(2);
    source.close();
    assertThat(blocks.used()).as("the pages keep their two blocks").isEqualTo(2);

    KvCache reuse = new KvCache(1, 1, 1, blocks);
    reuse.attachPages(List.of(p0, p1), PAGE);
    assertThat(reuse.length()).isEqualTo(8);
    assertThat(reuse.blockTable().id(1)).isEqualTo(shared);
    assertThat(reuse.a(0)[5]).isEqualTo(105f);
    assertThat(blocks.used()).isEqualTo(2);
    p0.close();
    p1.close();
    p1.close(); // idempotent
    assertThat(blocks.used()).as("the reusing cache holds them").isEqualTo(2);
    write(reuse, 12, 0);
    assertThat(blocks.used()).isEqualTo(3);
    reuse.truncateBlocks(5);
    assertThat(reuse.blockCount()).isEqualTo(2);
    reuse.close();
    assertThat(blocks.used()).isZero();
  }

  @Test
  void pagesOfAnotherAllocatorOrPageSizeAreRefused() {
    KvBlockAllocator blocks = new KvBlockAllocator(PAGE, 8);
    KvBlockAllocator other = new KvBlockAllocator(PAGE, 8);
    KvCache source = new KvCache(1, 1, 1, other);
    write(source, 4, 0);
    KvCache.Page foreign = source.retainPage(0, PAGE);
    KvCache target = new KvCache(1, 1, 1, blocks);
    assertThatThrownBy(() -> target.attachPages(List.of(foreign), PAGE))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("allocator");
    assertThatThrownBy(() -> source.retainPage(0, 2))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("--page-size");
    foreign.close();
    assertThatThrownBy(() -> new KvCache(1, 1, 1, other).attachPages(List.of(foreign), PAGE))
        .isInstanceOf(IllegalArgumentException.class);
    assertThat(blocks.used()).isZero();
    source.close();
    assertThat(other.used()).isZero();
  }

  @Test
  void aFullAllocatorFailsBeforeTheCacheGrows() {
    KvBlockAllocator blocks = new KvBlockAllocator(PAGE, 2);
    KvCache c = new KvCache(1, 1, 1, blocks);
    write(c, 8, 0);
    assertThatThrownBy(() -> c.ensureCapacity(9))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("KV cache is full");
    assertThat(c.blockCount()).isEqualTo(2);
    assertThat(c.length()).isEqualTo(8);
    c.close();
  }

  @Test
  void aShardedCacheTakesOneSetOfIdsForEveryShard() {
    KvBlockAllocator blocks = new KvBlockAllocator(PAGE, 8);
    KvCache sharded =
        KvCache.ofShards(
            new KvCache[] {new KvCache(1, 1, 1), new KvCache(1, 1, 1)}, blocks.newTable());
    sharded.ensureCapacity(8);
    assertThat(blocks.used()).as("two blocks, not two per shard").isEqualTo(2);
    for (int r = 0; r < 2; r++) {
      write(sharded.shard(r), 8, r * 10);
    }
    sharded.setLength(8);
    KvCache.Page page = sharded.retainPage(1, PAGE);
    sharded.close();
    assertThat(blocks.used()).isEqualTo(1);
    KvCache reuse =
        KvCache.ofShards(
            new KvCache[] {new KvCache(1, 1, 1), new KvCache(1, 1, 1)}, blocks.newTable());
    reuse.attachPages(List.of(page), PAGE);
    assertThat(reuse.blockCount()).isEqualTo(1);
    assertThat(reuse.shard(1).a(0)[0]).as("shard 1's rows of positions 4-7").isEqualTo(14f);
    assertThat(blocks.used()).isEqualTo(1);
    page.close();
    reuse.close();
    assertThat(blocks.used()).isZero();
  }

  @Test
  void aCacheWithoutAllocatorSaysHowToGetBlocks() {
    KvCache c = new KvCache(1, 1, 1);
    assertThat(c.blockTable()).isNull();
    assertThatThrownBy(() -> c.reserve(4))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("newCache(KvBlockAllocator)");
  }
}
