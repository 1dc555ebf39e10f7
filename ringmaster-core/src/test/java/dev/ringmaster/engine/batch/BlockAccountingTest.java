package dev.ringmaster.engine.batch;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.engine.SamplingParams;
import dev.ringmaster.runtime.KvBlockAllocator;
import dev.ringmaster.runtime.KvBlockTable;
import dev.ringmaster.runtime.KvCache;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The scheduler's count of KV blocks is the backend's: the scheduler driven step by step as the
 * engine drives it, over heap caches whose block tables (what a paged backend indexes its storage
 * by) come from the scheduler's allocator, through prefix sharing, eviction and preemption. After
 * every step each block's references are exactly the running caches' tables that hold it plus one
 * if the prefix cache holds it, and the allocator's used count is the number of such blocks.
 */
class BlockAccountingTest {
  private static final int PAGE = 2;

  @Test
  void allocatorCountsEqualTablesPlusTreePagesThroughSharingEvictionAndPreemption() {
    BatchConfig cfg = new BatchConfig(4, 64, 8, PAGE, 14, false);
    KvBlockAllocator blocks = new KvBlockAllocator(PAGE, cfg.kvBlocks());
    Scheduler scheduler =
        new Scheduler(cfg, blocks, () -> new KvCache(1, 1, 1, blocks), new AtomicInteger(12));
    List<Sequence> all = new ArrayList<>();
    for (int wave = 0; wave < 3; wave++) {
      for (int q = 0; q < 4; q++) {
        int[] prompt = {40 + wave % 2, 41, 42, 43, 44, 45, 50 + q, 60 + wave};
        Sequence s = sequence(prompt);
        all.add(s);
        scheduler.enqueue(s);
      }
    }
    int finished = 0;
    boolean evicted = false;
    for (int steps = 0; finished < all.size(); steps++) {
      assertThat(steps).as("steps").isLessThan(500);
      scheduler.admit();
      int pagesBefore = scheduler.radix().pages();
      Step step = scheduler.plan();
      evicted |= scheduler.radix().pages() < pagesBefore;
      assertThat(step).as("a step can run").isNotNull();
      checkAccounting(scheduler, blocks);
      for (int i = 0; i < step.seqs().size(); i++) {
        Sequence s = step.seqs().get(i);
        int end = step.starts()[i] + step.counts()[i];
        assertThat(s.cache.blockCount())
            .as("the step's positions have blocks before it runs")
            .isGreaterThanOrEqualTo(blocks.blocksFor(end));
        s.cache.ensureCapacity(end);
        s.cache.setLength(end); // what the forward would store
        s.planned = end;
        if (step.samples()[i]) {
          s.append(7);
          scheduler.cachePrefill(s);
          if (s.length() >= s.maxTokens) {
            scheduler.cachePages(s);
            scheduler.remove(s);
            finished++;
          }
        }
      }
      checkAccounting(scheduler, blocks);
    }
    assertThat(scheduler.preemptions()).as("the pool was short enough to preempt").isPositive();
    assertThat(evicted).as("prefix-cache pages were evicted to make room").isTrue();
    assertThat(scheduler.cachedTokens()).as("later waves reused cached prefixes").isPositive();
    assertThat(blocks.used()).isEqualTo(scheduler.radix().pages()).isPositive();
    scheduler.flushCache();
    assertThat(blocks.used()).isZero();
  }

  /** Every block's references are its tables' plus the tree's one; used counts those blocks. */
  private static void checkAccounting(Scheduler scheduler, KvBlockAllocator blocks) {
    int[] tableRefs = new int[blocks.capacity() + 1];
    Set<Integer> inTables = new HashSet<>();
    for (Sequence s : scheduler.all()) {
      if (s.cache == null) {
        continue;
      }
      KvBlockTable t = s.cache.blockTable();
      Set<Integer> mine = new HashSet<>();
      for (int i = 0; i < t.count(); i++) {
        int id = t.id(i);
        assertThat(mine.add(id)).as("a table holds a block once").isTrue();
        tableRefs[id]++;
        inTables.add(id);
      }
    }
    int treeHeld = 0;
    int inUse = 0;
    for (int id = 1; id <= blocks.capacity(); id++) {
      int refs = blocks.references(id);
      int tree = refs - tableRefs[id];
      assertThat(tree).as("block %d: the tree's references", id).isBetween(0, 1);
      treeHeld += tree;
      if (refs > 0) {
        inUse++;
      }
    }
    assertThat(treeHeld).as("one reference per tree page").isEqualTo(scheduler.radix().pages());
    assertThat(blocks.used()).isEqualTo(inUse);
    assertThat(inUse).isGreaterThanOrEqualTo(inTables.size());
  }

  private static Sequence sequence(int[] prompt) {
    SamplingParams greedy = new SamplingParams(0, 1, 0, 0, 8, true, List.of());
    EngineRequest r = new EngineRequest(null, prompt, greedy, new int[] {1}, -1, new Collector());
    return new Sequence(r, new RequestHandle("r", () -> {}), 1024);
  }
}
