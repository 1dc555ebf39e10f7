package dev.ringmaster.model.multinode;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.backend.cpu.model.CausalLm;
import dev.ringmaster.runtime.KvBlockAllocator;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.testing.ForwardingLanguageModel;
import dev.ringmaster.testing.RepoPaths;
import org.junit.jupiter.api.Test;

/**
 * A follower's mirror follows node 0's block-table changes: pages retained and released, and the
 * blocks a rolled-back cache gave back, replayed in order on caches of the follower's own
 * allocator, end with the same counts.
 */
class CacheMirrorBlocksTest {
  private static final int PAGE = 4;

  @Test
  void replayedOperationsLeaveTheFollowersAllocatorWhereNodeZerosIs() {
    try (CausalLm lm = CausalLm.load(RepoPaths.require("fixtures/golden/deepseek_v3_basic"))) {
      KvBlockAllocator nodeZero = new KvBlockAllocator(PAGE, 16);
      KvBlockAllocator follower = new KvBlockAllocator(PAGE, 16);
      CacheOps ops = new CacheOps();
      KvCache cache =
          NodeCache.open(
              7, lm.newCache(nodeZero), ops, new java.util.concurrent.atomic.AtomicInteger());
      try (CacheMirror mirror =
          new CacheMirror(
              new ForwardingLanguageModel(lm) {
                @Override
                public KvCache newCache() {
                  return lm.newCache(follower); // a node with fixed storage: its own allocator
                }
              })) {
        int[] prompt = {5, 9, 13, 2, 44, 7, 7, 31, 8, 100};
        cache.reserve(16); // node 0's scheduler reserved drafts too
        cache.ensureCapacity(prompt.length); // as DistributedLm's step does before it runs
        lm.forwardAll(prompt, ((NodeCache) cache.external()).inner);
        cache.setLength(prompt.length);
        mirror.apply(ops.drain());
        KvCache mine = mirror.cache(7);
        mine.ensureCapacity(16); // its verify step wrote drafts up to position 15
        lm.forwardAll(prompt, mine);
        assertThat(follower.used()).isEqualTo(4);
        KvCache.Page page = cache.retainPage(1, PAGE);
        cache.truncateBlocks(prompt.length); // rejected drafts' blocks go back
        mirror.apply(ops.drain());
        assertThat(nodeZero.used()).isEqualTo(3);
        assertThat(follower.used()).isEqualTo(nodeZero.used());
        assertThat(mirror.pages()).isEqualTo(1);
        cache.close();
        mirror.apply(ops.drain());
        assertThat(nodeZero.used()).as("the page keeps its block").isEqualTo(1);
        assertThat(follower.used()).isEqualTo(1);
        page.close();
        mirror.apply(ops.drain());
        assertThat(nodeZero.used()).isZero();
        assertThat(follower.used()).isZero();
      }
    }
  }
}
