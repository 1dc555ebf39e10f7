package dev.ringmaster.parallel;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.management.ManagementFactory;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Steady-state collectives must not allocate (staging is reused once grown). */
class CollectiveAllocationTest {
  private static final int ROUNDS = 200;

  @Test
  void steadyStateCallsAllocateNothing() {
    var threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    assertThat(threads.isThreadAllocatedMemorySupported()).isTrue();
    threads.setThreadAllocatedMemoryEnabled(true);
    int n = 4;
    LocalWorld world =
        LocalWorld.create(LocalWorldConfig.of(n, AllReduceAlgorithm.AUTO).withChunkElements(64));
    List<Long> allocated =
        world.call(
            group -> {
              int len = 3001;
              float[] buf = new float[len];
              float[] gathered = new float[n * len];
              int[] counts = Splits.even(len, n);
              float[] part = new float[counts[group.rank()]];
              int[] sendCounts = {5, 0, 17, 300};
              int[] recvCounts = new int[n];
              float[] recv = new float[4 * 300];
              AllReduceAlgorithm[] algorithms = AllReduceAlgorithm.values(); // values() copies
              Runnable round =
                  () -> {
                    for (AllReduceAlgorithm a : algorithms) {
                      group.allReduce(buf, 0, len, a);
                      group.allReduce(buf, 0, 7, a);
                    }
                    group.allGather(buf, 0, len, gathered);
                    group.reduceScatter(gathered, part, counts);
                    group.exchangeCounts(sendCounts, recvCounts);
                    group.allToAll(buf, sendCounts, recv, recvCounts);
                    group.broadcast(buf, 0, len, 1);
                    group.barrier();
                  }; // 16 collectives per round
              for (int i = 0; i < 50; i++) {
                round.run();
              }
              long id = Thread.currentThread().threadId();
              long before = threads.getThreadAllocatedBytes(id);
              for (int i = 0; i < ROUNDS; i++) {
                round.run();
              }
              return threads.getThreadAllocatedBytes(id) - before;
            });
    // One 16-byte object per call would be 16 * CALLS_PER_ROUND * ROUNDS = 51 KiB. What remains
    // is occasional and small (a few hundred bytes on some rank, most windows zero), likely the
    // JIT re-materialising scalar-replaced objects when it deoptimises.
    assertThat(allocated).allSatisfy(bytes -> assertThat(bytes).isLessThan(4096));
  }
}
