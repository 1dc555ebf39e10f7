package dev.ringmaster.parallel;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Counting the collectives a rank issues. */
class CollectiveStatsTest {

  @Test
  void countsOperationsBytesAndChosenAlgorithms() {
    LocalWorld world =
        LocalWorld.create(
            LocalWorldConfig.of(2, AllReduceAlgorithm.AUTO)
                .withTable(new AllReduceTable(400, 4000)));
    List<String> trace = new ArrayList<>();
    world
        .group(0)
        .stats()
        .setListener((op, algo, bytes) -> trace.add(op + " " + algo + " " + bytes));
    world.run(
        group -> {
          group.allReduce(new float[100]); // 400 B: one-shot
          group.allReduce(new float[1000]); // 4000 B: two-shot
          group.allReduce(new float[1001]); // ring
          group.allGather(new float[10], 0, 10, new float[20]);
          group.reduceScatter(new float[6], new float[3], new int[] {3, 3});
          group.broadcast(new float[8], 0, 8, 0);
          group.barrier();
        });
    CollectiveStats stats = world.group(0).stats();
    assertThat(stats.count(CollectiveOp.ALL_REDUCE)).isEqualTo(3);
    assertThat(stats.bytes(CollectiveOp.ALL_REDUCE)).isEqualTo(400 + 4000 + 4004);
    assertThat(stats.bytes(CollectiveOp.ALL_GATHER)).isEqualTo(80);
    assertThat(stats.bytes(CollectiveOp.REDUCE_SCATTER)).isEqualTo(24);
    assertThat(stats.totalCount()).isEqualTo(7);
    CollectiveStats.Snapshot snapshot = stats.snapshot();
    assertThat(snapshot.allReducesByAlgorithm())
        .isEqualTo(
            Map.of(
                AllReduceAlgorithm.ONESHOT, 1L,
                AllReduceAlgorithm.TWOSHOT, 1L,
                AllReduceAlgorithm.RING, 1L));
    assertThat(snapshot.counts()).doesNotContainKey(CollectiveOp.ALL_TO_ALL);
    assertThat(trace).startsWith("ALL_REDUCE ONESHOT 400", "ALL_REDUCE TWOSHOT 4000").hasSize(7);
    stats.reset();
    assertThat(stats.totalCount()).isZero();
    assertThat(world.group(1).stats().totalCount()).isEqualTo(7);
  }
}
