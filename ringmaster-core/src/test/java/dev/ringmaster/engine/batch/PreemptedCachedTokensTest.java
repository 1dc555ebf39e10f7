package dev.ringmaster.engine.batch;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.engine.SamplingParams;
import dev.ringmaster.runtime.KvBlockAllocator;
import dev.ringmaster.runtime.KvCache;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * What {@code cached_tokens} reports for a request that was preempted: the scheduler driven step by
 * step as the engine drives it (heap caches, every sampled token 7), with a pool of 8 blocks that
 * two growing requests overflow. The preempted request finds its own prompt pages in the tree when
 * it comes back; it computed them itself, so it reports 0 cached tokens, while the engine-wide
 * counter counts the reuse.
 */
class PreemptedCachedTokensTest {
  private static final int PAGE = 4;

  @Test
  void aRequestReportsOnlyCachedPositionsItNeverComputed() {
    BatchConfig cfg = new BatchConfig(8, 8, 64, PAGE, 8, false);
    KvBlockAllocator pool = new KvBlockAllocator(PAGE, cfg.kvBlocks());
    Scheduler scheduler =
        new Scheduler(cfg, pool, () -> new KvCache(1, 1, 1, pool), new AtomicInteger(2));
    Sequence a = sequence(new int[] {2, 3, 4, 5, 6, 7, 8, 9, 10});
    Sequence b = sequence(new int[] {20, 21, 22, 23, 24, 25, 26, 27, 28});
    scheduler.enqueue(a);
    scheduler.enqueue(b);
    List<Sequence> finished = new ArrayList<>();
    for (int steps = 0; finished.size() < 2; steps++) {
      assertThat(steps).as("steps").isLessThan(200);
      scheduler.admit();
      Step step = scheduler.plan();
      assertThat(step).as("a step can run").isNotNull();
      for (int i = 0; i < step.seqs().size(); i++) {
        Sequence s = step.seqs().get(i);
        int end = step.starts()[i] + step.counts()[i];
        s.cache.ensureCapacity(end);
        s.cache.setLength(end); // what the forward would store
        s.planned = end;
        if (step.samples()[i]) {
          s.append(7);
          scheduler.cachePrefill(s);
          if (s.length() >= s.maxTokens) {
            scheduler.cachePages(s);
            scheduler.remove(s);
            finished.add(s);
          }
        }
      }
    }
    assertThat(b.preemptions).as("the newer request was preempted").isPositive();
    assertThat(a.preemptions).isZero();
    assertThat(a.cachedTokens).isZero();
    assertThat(b.cachedTokens).as("its prompt pages were its own").isZero();
    assertThat(scheduler.cachedTokens())
        .as("the re-admission reused its two prompt pages")
        .isEqualTo(2 * PAGE);
    int treeBlocks = pool.used();
    assertThat(scheduler.flushCache()).isEqualTo(treeBlocks).isPositive();
    assertThat(pool.used()).isZero();
  }

  private static Sequence sequence(int[] prompt) {
    SamplingParams greedy = new SamplingParams(0, 1, 0, 0, 12, true, List.of());
    EngineRequest r = new EngineRequest(null, prompt, greedy, new int[] {1}, -1, new Collector());
    return new Sequence(r, new RequestHandle("r", () -> {}), 1024);
  }
}
