package dev.ringmaster.backend.cpu;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicIntegerArray;
import org.junit.jupiter.api.Test;

class CostedLoopTest {
  @Test
  void firstRunIsSerialOnTheCallerToTimeTheRate() {
    CostedLoop loop = new CostedLoop(CpuKernelContext.shared());
    Set<Thread> seen = ConcurrentHashMap.newKeySet();
    loop.run(16, 1e9, i -> seen.add(Thread.currentThread()));
    assertThat(seen).containsExactly(Thread.currentThread());
  }

  @Test
  void runsEveryTaskOnceWhateverTheCost() {
    CostedLoop loop = new CostedLoop(CpuKernelContext.shared());
    for (int round = 0; round < 300; round++) {
      int tasks = 1 + round % 13;
      AtomicIntegerArray runs = new AtomicIntegerArray(tasks);
      loop.run(tasks, round % 2 == 0 ? 10 : 1e8, i -> busy(runs, i));
      for (int i = 0; i < tasks; i++) {
        assertThat(runs.get(i)).as("round %d task %d", round, i).isEqualTo(1);
      }
    }
  }

  @Test
  void rethrowsAFailingTask() {
    CostedLoop loop = new CostedLoop(CpuKernelContext.shared());
    assertThatThrownBy(
            () ->
                loop.run(
                    4,
                    100,
                    i -> {
                      if (i == 2) {
                        throw new IllegalArgumentException("task 2");
                      }
                    }))
        .hasMessage("task 2");
  }

  private static void busy(AtomicIntegerArray runs, int i) {
    double x = 0;
    for (int k = 0; k < 2000; k++) {
      x += Math.sqrt(k + i);
    }
    runs.incrementAndGet(i);
    if (x < 0) {
      throw new AssertionError();
    }
  }
}
