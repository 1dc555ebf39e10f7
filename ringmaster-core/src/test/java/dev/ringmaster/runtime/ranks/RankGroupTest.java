package dev.ringmaster.runtime.ranks;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.KvCache;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The rank-group executor on its own: results by rank, one step at a time, each rank on its own
 * thread in submission order; the first failure wakes the other ranks (once), skips work that had
 * not started and is what the step throws; the grace gives up on a rank that never finishes; an
 * interrupted caller and a close during a step fail the step from outside.
 */
@Timeout(30)
class RankGroupTest {
  private static List<RankWorker> threads(int n) {
    List<RankWorker> out = new ArrayList<>();
    for (int r = 0; r < n; r++) {
      out.add(RankWorker.ownThread("test-rank-" + r));
    }
    return out;
  }

  /** A policy that records its aborts and opens {@code wake} (as aborting a world wakes ranks). */
  private static class Recording implements FailurePolicy {
    final List<String> aborts = new CopyOnWriteArrayList<>();
    final CountDownLatch wake = new CountDownLatch(1);
    final Duration grace;

    Recording(Duration grace) {
      this.grace = grace;
    }

    @Override
    public void abort(int rank, Throwable cause) {
      aborts.add(rank + ": " + cause.getMessage());
      wake.countDown();
    }

    @Override
    public Duration grace() {
      return grace;
    }

    /** What a rank blocked in a collective does: waits until aborted, then fails. */
    Object waitForAbort(int rank) throws InterruptedException {
      if (!wake.await(20, TimeUnit.SECONDS)) {
        throw new AssertionError("rank " + rank + " was never woken");
      }
      throw new IllegalStateException("rank " + rank + " woken by the abort");
    }
  }

  @Test
  void returnsRankZerosResultAndEveryRanksInOrderEachOnItsOwnThread() {
    try (RankGroup g = new RankGroup(threads(3), FailurePolicy.waitForAll())) {
      assertThat(g.size()).isEqualTo(3);
      assertThat(g.<String>step(r -> "rank " + r)).isEqualTo("rank 0");
      assertThat(g.all(r -> Thread.currentThread().getName()))
          .containsExactly("test-rank-0", "test-rank-1", "test-rank-2");
    }
  }

  @Test
  void ranksRunTogetherWithinAStepAndStepsNeverOverlap() throws Exception {
    int ranks = 3;
    try (RankGroup g = new RankGroup(threads(ranks), FailurePolicy.waitForAll())) {
      List<String> events = Collections.synchronizedList(new ArrayList<>());
      AtomicInteger stepNo = new AtomicInteger();
      Runnable steps =
          () -> {
            for (int i = 0; i < 20; i++) {
              int[] arrived = new int[1];
              CountDownLatch all = new CountDownLatch(ranks);
              g.step(
                  r -> {
                    int s = r == 0 ? stepNo.incrementAndGet() : -1;
                    events.add("start");
                    // Every rank must be running at once, as in a collective.
                    all.countDown();
                    if (!all.await(10, TimeUnit.SECONDS)) {
                      throw new AssertionError("the ranks of one step did not run together");
                    }
                    synchronized (arrived) {
                      arrived[0]++;
                    }
                    events.add("end");
                    return s;
                  });
            }
          };
      // Two callers at once: their steps must still run one after the other.
      CompletableFuture<Void> a = CompletableFuture.runAsync(steps);
      CompletableFuture<Void> b = CompletableFuture.runAsync(steps);
      a.get(20, TimeUnit.SECONDS);
      b.get(20, TimeUnit.SECONDS);
      assertThat(stepNo.get()).isEqualTo(40);
      // Each step is 3 starts then 3 ends: a start after an end of the same step would show
      // overlap.
      for (int i = 0; i < events.size(); i += 2 * ranks) {
        assertThat(events.subList(i, i + ranks)).as("step %d", i / 6).containsOnly("start");
        assertThat(events.subList(i + ranks, i + 2 * ranks)).containsOnly("end");
      }
    }
  }

  @Test
  void theFirstFailureAbortsTheOthersOnceAndIsThrownWithTheirsSuppressed() {
    Recording policy = new Recording(null);
    try (RankGroup g = new RankGroup(threads(3), policy)) {
      CountDownLatch othersStarted = new CountDownLatch(2);
      assertThatThrownBy(
              () ->
                  g.step(
                      r -> {
                        if (r == 1) {
                          othersStarted.await();
                          throw new IllegalArgumentException("injected on rank 1");
                        }
                        othersStarted.countDown();
                        return policy.waitForAbort(r);
                      }))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("injected on rank 1")
          .satisfies(
              e ->
                  assertThat(e.getSuppressed())
                      .extracting(Throwable::getMessage)
                      .containsExactlyInAnyOrder(
                          "rank 0 woken by the abort", "rank 2 woken by the abort"));
      assertThat(policy.aborts).containsExactly("1: injected on rank 1");
      assertThat(g.stuck()).isFalse();
      // The group stays usable: the next step is a new one.
      assertThat(g.<Integer>step(r -> r + 7)).isEqualTo(7);
    }
  }

  @Test
  void thePolicyShapesTheExceptionFromTheWholeFailure() {
    FailurePolicy policy =
        new FailurePolicy() {
          @Override
          public void abort(int rank, Throwable cause) {}

          @Override
          public RuntimeException report(StepFailure f) {
            return new IllegalStateException(
                "first "
                    + f.firstRank()
                    + ", failed "
                    + (f.errors()[0] != null)
                    + "/"
                    + (f.errors()[1] != null));
          }
        };
    try (RankGroup g = new RankGroup(threads(2), policy)) {
      CountDownLatch rank0Done = new CountDownLatch(1);
      assertThatThrownBy(
              () ->
                  g.step(
                      r -> {
                        if (r == 1) {
                          rank0Done.await();
                          throw new java.io.IOException("checked failure");
                        }
                        rank0Done.countDown();
                        return r;
                      }))
          .isInstanceOf(IllegalStateException.class)
          .hasMessage("first 1, failed false/true");
    }
  }

  @Test
  void aCheckedFailureIsWrappedNamingTheRank() {
    try (RankGroup g = new RankGroup(threads(2), FailurePolicy.waitForAll())) {
      assertThatThrownBy(
              () ->
                  g.step(
                      r -> {
                        if (r == 1) {
                          throw new java.io.IOException("disk gone");
                        }
                        return r;
                      }))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("rank 1 failed")
          .hasRootCauseInstanceOf(java.io.IOException.class);
    }
  }

  @Test
  void workThatHasNotStartedIsSkippedOnceARankFailed() throws Exception {
    List<RankWorker> workers = threads(2);
    CountDownLatch rank1Busy = new CountDownLatch(1);
    // Rank 1's thread is busy with earlier work when the step arrives.
    workers.get(1).execute(() -> awaitQuietly(rank1Busy));
    AtomicBoolean rank1Ran = new AtomicBoolean();
    Recording policy =
        new Recording(null) {
          @Override
          public void abort(int rank, Throwable cause) {
            super.abort(rank, cause);
            rank1Busy.countDown(); // only now may rank 1 look at its step
          }
        };
    try (RankGroup g = new RankGroup(workers, policy)) {
      assertThatThrownBy(
              () ->
                  g.step(
                      r -> {
                        if (r == 0) {
                          throw new IllegalStateException("rank 0 fails at once");
                        }
                        rank1Ran.set(true);
                        return r;
                      }))
          .hasMessage("rank 0 fails at once")
          .satisfies(
              e ->
                  assertThat(e.getSuppressed())
                      .singleElement()
                      .isInstanceOf(CancellationException.class)
                      .extracting(Throwable::getMessage)
                      .asString()
                      .contains("rank 1 skipped its part", "rank 0 failed first"));
      assertThat(rank1Ran).isFalse();
    }
  }

  @Test
  void theGraceGivesUpOnARankThatNeverFinishesAndCloseInterruptsIt() throws Exception {
    CountDownLatch never = new CountDownLatch(1);
    CompletableFuture<Boolean> interrupted = new CompletableFuture<>();
    FailurePolicy policy =
        new FailurePolicy() {
          @Override
          public void abort(int rank, Throwable cause) {} // as NCCL: nothing wakes the rank

          @Override
          public Duration grace() {
            return Duration.ofMillis(200);
          }

          @Override
          public RuntimeException report(StepFailure f) {
            return new IllegalStateException("unfinished " + f.unfinishedRanks());
          }
        };
    RankGroup g = new RankGroup(threads(2), policy);
    CountDownLatch rank1Started = new CountDownLatch(1);
    long start = System.nanoTime();
    assertThatThrownBy(
            () ->
                g.step(
                    r -> {
                      if (r == 0) {
                        rank1Started.await();
                        throw new IllegalStateException("rank 0 failed");
                      }
                      rank1Started.countDown();
                      try {
                        never.await();
                      } catch (InterruptedException e) {
                        interrupted.complete(true);
                      }
                      return r;
                    }))
        .hasMessage("unfinished [1]");
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));
    assertThat(g.stuck()).isTrue();
    g.close();
    assertThat(interrupted.get(10, TimeUnit.SECONDS)).isTrue();
  }

  @Test
  void anInterruptedCallerAbortsTheRanksAndKeepsItsInterrupt() throws Exception {
    Recording policy = new Recording(null);
    try (RankGroup g = new RankGroup(threads(2), policy)) {
      CountDownLatch running = new CountDownLatch(2);
      CompletableFuture<Throwable> thrown = new CompletableFuture<>();
      AtomicBoolean stillInterrupted = new AtomicBoolean();
      Thread caller =
          Thread.ofPlatform()
              .start(
                  () -> {
                    try {
                      g.step(
                          r -> {
                            running.countDown();
                            return policy.waitForAbort(r);
                          });
                      thrown.complete(null);
                    } catch (RuntimeException e) {
                      stillInterrupted.set(Thread.currentThread().isInterrupted());
                      thrown.complete(e);
                    }
                  });
      assertThat(running.await(10, TimeUnit.SECONDS)).isTrue();
      caller.interrupt();
      Throwable e = thrown.get(10, TimeUnit.SECONDS);
      assertThat(e)
          .isInstanceOf(RuntimeException.class)
          .hasRootCauseInstanceOf(InterruptedException.class);
      assertThat(policy.aborts).singleElement().asString().startsWith("-1: interrupted");
      assertThat(stillInterrupted).isTrue();
    }
  }

  @Test
  void closingDuringAStepFailsItAndLaterStepsAreRefused() throws Exception {
    Recording policy = new Recording(null);
    RankGroup g = new RankGroup(threads(2), policy);
    CountDownLatch running = new CountDownLatch(2);
    CompletableFuture<Object> step =
        CompletableFuture.supplyAsync(
            () ->
                g.step(
                    r -> {
                      running.countDown();
                      return policy.waitForAbort(r);
                    }));
    assertThat(running.await(10, TimeUnit.SECONDS)).isTrue();
    g.close();
    assertThat(policy.aborts)
        .singleElement()
        .asString()
        .isEqualTo("-1: the rank group was closed while a step ran");
    assertThatThrownBy(() -> step.get(10, TimeUnit.SECONDS))
        .hasRootCauseMessage("the rank group was closed while a step ran");
    assertThatThrownBy(() -> g.step(r -> r))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("the rank group is closed");
  }

  @Test
  void aWorkerThatRefusesWorkFailsTheStepAndWakesTheOthers() {
    List<RankWorker> workers = threads(2);
    workers.get(1).close();
    Recording policy = new Recording(null);
    try (RankGroup g = new RankGroup(workers, policy)) {
      assertThatThrownBy(() -> g.step(policy::waitForAbort))
          .isInstanceOf(RejectedExecutionException.class);
      assertThat(policy.aborts).singleElement().asString().startsWith("1: ");
    }
  }

  @Test
  void aShardedStepReservesEveryShardFirstAndTakesTheLengthFromTheFirst() {
    try (RankGroup g = new RankGroup(threads(2), FailurePolicy.waitForAll())) {
      KvCache a = g.newShardedCache(r -> new KvCache(1, 4, 2));
      KvCache b = g.newShardedCache(r -> new KvCache(1, 4, 2));
      // Sequence 0 gets three tokens at 0..2, sequence 1 none.
      BatchLayout layout = new BatchLayout(new int[] {0, 3, 3}, new int[] {0, 1, 2});
      List<String> seen = new CopyOnWriteArrayList<>();
      String out =
          g.stepOnShards(
              layout,
              new KvCache[] {a, b},
              (r, shards) -> {
                assertThat(shards[0]).isSameAs(a.shard(r));
                assertThat(shards[1]).isSameAs(b.shard(r));
                seen.add(r + ":" + shards[0].length());
                shards[0].setLength(3); // throws unless room was reserved before the step
                return "rank " + r;
              });
      assertThat(out).isEqualTo("rank 0");
      assertThat(seen).containsExactlyInAnyOrder("0:0", "1:0");
      assertThat(a.length()).isEqualTo(3);
      assertThat(b.length()).isZero();
    }
  }

  @Test
  void aFullPoolFailsTheShardedStepBeforeAnyRankStarts() {
    AtomicBoolean ran = new AtomicBoolean();
    try (RankGroup g = new RankGroup(threads(2), FailurePolicy.waitForAll())) {
      KvCache full =
          g.newShardedCache(
              r ->
                  KvCache.ofExternal(
                      new KvCache.External() {
                        @Override
                        public void ensureCapacity(int tokens) {
                          if (r == 1) {
                            throw new IllegalStateException("rank 1's pool is full");
                          }
                        }

                        @Override
                        public void close() {}
                      }));
      BatchLayout layout = new BatchLayout(new int[] {0, 1}, new int[] {0});
      assertThatThrownBy(
              () ->
                  g.stepOnShards(
                      layout,
                      new KvCache[] {full},
                      (r, shards) -> {
                        ran.set(true);
                        return r;
                      }))
          .hasMessage("rank 1's pool is full");
      assertThat(ran).isFalse();
    }
  }

  @Test
  void aShardThatCannotBeMadeClosesTheOnesMadeBefore() {
    AtomicInteger closed = new AtomicInteger();
    try (RankGroup g = new RankGroup(threads(3), FailurePolicy.waitForAll())) {
      assertThatThrownBy(
              () ->
                  g.newShardedCache(
                      r -> {
                        if (r == 2) {
                          throw new IllegalStateException("pool full on rank 2");
                        }
                        return KvCache.ofExternal(
                            new KvCache.External() {
                              @Override
                              public void ensureCapacity(int tokens) {}

                              @Override
                              public void close() {
                                closed.incrementAndGet();
                              }
                            });
                      }))
          .hasMessage("pool full on rank 2");
      assertThat(closed).hasValue(2);
    }
  }

  @Test
  void aGroupNeedsARank() {
    assertThatThrownBy(() -> new RankGroup(List.of(), FailurePolicy.waitForAll()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("at least one rank");
  }

  private static void awaitQuietly(CountDownLatch l) {
    try {
      l.await(20, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
