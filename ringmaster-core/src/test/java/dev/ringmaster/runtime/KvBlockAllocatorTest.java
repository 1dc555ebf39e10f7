package dev.ringmaster.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** The one KV block allocator and the block tables drawn from it. */
class KvBlockAllocatorTest {
  @Test
  void countsBlocksInPagesOfTokens() {
    KvBlockAllocator a = new KvBlockAllocator(16, 4);
    assertThat(a.blocksFor(0)).isZero();
    assertThat(a.blocksFor(1)).isEqualTo(1);
    assertThat(a.blocksFor(16)).isEqualTo(1);
    assertThat(a.blocksFor(17)).isEqualTo(2);
    assertThat(a.capacityTokens()).isEqualTo(64);
    assertThat(a.free()).isEqualTo(4);
    assertThat(a.used()).isZero();
    assertThatThrownBy(() -> new KvBlockAllocator(0, 4))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("page size");
    assertThatThrownBy(() -> new KvBlockAllocator(16, 0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("capacity");
  }

  @Test
  void handsOutLowIdsFirstNeverZeroAndReusesTheLastReleased() {
    KvBlockAllocator a = new KvBlockAllocator(4, 8);
    KvBlockTable t = a.newTable();
    t.ensure(12);
    assertThat(ids(t)).containsExactly(1, 2, 3);
    t.truncate(4);
    assertThat(ids(t)).containsExactly(1);
    t.ensure(9);
    assertThat(ids(t)).containsExactly(1, 2, 3); // 3 then 2 went back: 2 is on top
    assertThat(a.used()).isEqualTo(3);
    t.close();
    assertThat(a.used()).isZero();
  }

  @Test
  void referencesKeepASharedBlockUntilTheLastHolderLetsGo() {
    KvBlockAllocator a = new KvBlockAllocator(4, 8);
    KvBlockTable first = a.newTable();
    first.ensure(8);
    int page = first.retain(1); // a prefix-cache page on the second block
    assertThat(a.references(page)).isEqualTo(2);
    KvBlockTable second = a.newTable();
    second.attach(new int[] {first.id(0), page});
    assertThat(a.references(page)).isEqualTo(3);
    assertThat(a.used()).as("sharing takes no block").isEqualTo(2);
    first.close();
    first.close(); // idempotent
    assertThat(a.used()).isEqualTo(2);
    second.close();
    assertThat(a.used()).as("the page still holds its block").isEqualTo(1);
    a.release(page);
    assertThat(a.used()).isZero();
    assertThat(a.references(page)).isZero();
  }

  @Test
  void aDoubleReleaseOrAForeignIdIsAnError() {
    KvBlockAllocator a = new KvBlockAllocator(4, 8);
    KvBlockTable t = a.newTable();
    t.ensure(4);
    int id = t.retain(0);
    a.release(id);
    t.close();
    assertThatThrownBy(() -> a.release(id))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("double release");
    assertThatThrownBy(() -> a.retain(0)).isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> a.release(9)).isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> a.newTable().attach(new int[] {5}))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("not in use");
  }

  @Test
  void exhaustionTakesNothingAndSaysWhatToDo() {
    KvBlockAllocator a = new KvBlockAllocator(4, 3);
    KvBlockTable t = a.newTable();
    t.ensure(8);
    KvBlockTable u = a.newTable();
    assertThatThrownBy(() -> u.ensure(8))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("KV cache is full")
        .hasMessageContaining("--mem-fraction-static");
    assertThat(u.count()).isZero();
    assertThat(a.used()).isEqualTo(2);
    u.ensure(4);
    assertThat(a.free()).isZero();
  }

  @Test
  void aClosedTableTakesNothingAndAttachNeedsAnEmptyOne() {
    KvBlockAllocator a = new KvBlockAllocator(4, 8);
    KvBlockTable t = a.newTable();
    t.ensure(4);
    KvBlockTable u = a.newTable();
    u.ensure(4);
    assertThatThrownBy(() -> u.attach(new int[] {t.id(0)}))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("empty");
    t.close();
    assertThatThrownBy(() -> t.ensure(8))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("released");
    assertThat(a.used()).isEqualTo(1);
  }

  @Test
  void tablesOnManyThreadsNeverShareABlockTheyDidNotAttach() throws Exception {
    KvBlockAllocator a = new KvBlockAllocator(2, 64);
    Set<Integer> held = ConcurrentHashMap.newKeySet();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    CountDownLatch start = new CountDownLatch(1);
    List<Thread> threads = new ArrayList<>();
    for (int k = 0; k < 4; k++) {
      threads.add(
          Thread.ofPlatform()
              .start(
                  () -> {
                    try {
                      start.await();
                      for (int i = 0; i < 2000; i++) {
                        try (KvBlockTable t = a.newTable()) {
                          t.ensure(2 + i % 30); // at most 16 blocks: 4 threads fit in 64
                          for (int id : ids(t)) {
                            if (!held.add(id)) {
                              throw new AssertionError("block " + id + " handed out twice");
                            }
                          }
                          for (int id : ids(t)) {
                            held.remove(id);
                          }
                        }
                      }
                    } catch (Throwable e) {
                      failure.compareAndSet(null, e);
                    }
                  }));
    }
    start.countDown();
    for (Thread t : threads) {
      t.join();
    }
    assertThat(failure.get()).isNull();
    assertThat(a.used()).isZero();
  }

  private static List<Integer> ids(KvBlockTable t) {
    int[] out = new int[t.count()];
    t.copyTo(out, 0, out.length);
    List<Integer> list = new ArrayList<>();
    for (int id : out) {
      list.add(id);
    }
    assertThat(new HashSet<>(list)).hasSize(list.size());
    return list;
  }
}
