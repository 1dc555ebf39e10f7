package dev.ringmaster.engine.batch;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.engine.SamplingParams;
import dev.ringmaster.runtime.KvBlockAllocator;
import dev.ringmaster.runtime.KvCache;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Admission order with one running slot, after a request left its prompt's pages in the tree: LPM
 * admits the waiting request whose prefix is cached before an earlier one whose prefix is not, FCFS
 * keeps arrival order, and under LPM a request passed over too often goes first.
 */
class SchedulePolicyTest {
  private static final int PAGE = 4;
  private static final int[] CACHED = {2, 3, 4, 5, 6, 7, 8, 9, 10};
  private static final int[] SAME_PREFIX = {2, 3, 4, 5, 6, 7, 8, 9, 40};
  private static final int[] OTHER = {20, 21, 22, 23, 24, 25, 26, 27, 28};

  @Test
  void lpmAdmitsTheCachedPrefixFirst() {
    Scheduler s = scheduler(SchedulePolicy.LPM);
    Sequence other = sequence(OTHER);
    Sequence same = sequence(SAME_PREFIX);
    s.enqueue(other);
    s.enqueue(same);
    s.admit();
    assertThat(s.all().getFirst()).as("running").isSameAs(same);
    assertThat(same.cachedTokens).isEqualTo(2 * PAGE);
    assertThat(other.bypassed).isEqualTo(1);
  }

  @Test
  void fcfsKeepsArrivalOrder() {
    Scheduler s = scheduler(SchedulePolicy.FCFS);
    Sequence other = sequence(OTHER);
    s.enqueue(other);
    s.enqueue(sequence(SAME_PREFIX));
    s.admit();
    assertThat(s.all().getFirst()).as("running").isSameAs(other);
  }

  @Test
  void lpmLetsARequestPassedOverTooOftenGoFirst() {
    Scheduler s = scheduler(SchedulePolicy.LPM);
    Sequence other = sequence(OTHER);
    other.bypassed = SchedulePolicy.LPM_STARVATION_BOUND;
    s.enqueue(other);
    s.enqueue(sequence(SAME_PREFIX));
    s.admit();
    assertThat(s.all().getFirst()).as("running").isSameAs(other);
  }

  /** A scheduler of one running slot whose tree holds the whole pages of {@link #CACHED}. */
  private static Scheduler scheduler(SchedulePolicy policy) {
    BatchConfig cfg = new BatchConfig(1, 8, 64, PAGE, 64, false).withSchedulePolicy(policy);
    KvBlockAllocator pool = new KvBlockAllocator(PAGE, 64);
    Scheduler s = new Scheduler(cfg, pool, () -> new KvCache(1, 1, 1, pool), new AtomicInteger());
    Sequence first = sequence(CACHED);
    s.enqueue(first);
    s.admit();
    Step step = s.plan();
    first.cache.ensureCapacity(CACHED.length);
    first.cache.setLength(CACHED.length); // what the prefill would store
    first.planned = CACHED.length;
    first.append(7);
    s.cachePages(first);
    s.remove(first);
    assertThat(step.counts()).containsExactly(CACHED.length);
    assertThat(s.radix().pages()).isEqualTo(2);
    return s;
  }

  private static Sequence sequence(int[] prompt) {
    SamplingParams greedy = new SamplingParams(0, 1, 0, 0, 4, true, List.of());
    EngineRequest r = new EngineRequest(null, prompt, greedy, new int[] {1}, -1, new Collector());
    return new Sequence(r, new RequestHandle("r", () -> {}), 1024);
  }
}
