package dev.ringmaster.backend.cpu;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicIntegerArray;
import org.junit.jupiter.api.Test;

class CpuThreadPoolTest {
  @Test
  void runsEveryTaskOnceOnSeveralThreads() throws InterruptedException {
    try (CpuThreadPool pool = new CpuThreadPool(3)) {
      for (int round = 0; round < 200; round++) {
        AtomicIntegerArray runs = new AtomicIntegerArray(37);
        pool.run(37, runs::incrementAndGet);
        for (int i = 0; i < 37; i++) {
          assertThat(runs.get(i)).isEqualTo(1);
        }
      }
      Set<Thread> seen = ConcurrentHashMap.newKeySet();
      pool.run(
          30,
          i -> {
            seen.add(Thread.currentThread());
            sleep();
          });
      assertThat(seen).hasSizeGreaterThan(1);
    }
  }

  @Test
  void rethrowsTheFirstFailureAndStaysUsable() {
    try (CpuThreadPool pool = new CpuThreadPool(2)) {
      assertThatThrownBy(
              () ->
                  pool.run(
                      10,
                      i -> {
                        if (i == 4) {
                          throw new IllegalStateException("task 4");
                        }
                      }))
          .isInstanceOf(IllegalStateException.class)
          .hasMessage("task 4");
      AtomicIntegerArray runs = new AtomicIntegerArray(5);
      pool.run(5, runs::incrementAndGet);
      assertThat(runs.toString()).isEqualTo("[1, 1, 1, 1, 1]");
    }
  }

  @Test
  void nestedRegionsRunSerially() {
    try (CpuThreadPool pool = new CpuThreadPool(2)) {
      AtomicIntegerArray runs = new AtomicIntegerArray(16);
      pool.run(4, i -> pool.run(4, j -> runs.incrementAndGet(i * 4 + j)));
      for (int k = 0; k < 16; k++) {
        assertThat(runs.get(k)).isEqualTo(1);
      }
    }
  }

  @Test
  void refusesWorkAfterClose() {
    CpuThreadPool pool = new CpuThreadPool(2);
    pool.close();
    assertThatThrownBy(() -> pool.run(3, i -> {})).isInstanceOf(IllegalStateException.class);
  }

  private static void sleep() {
    try {
      Thread.sleep(2);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
