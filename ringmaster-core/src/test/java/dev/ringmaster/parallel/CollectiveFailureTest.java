package dev.ringmaster.parallel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** A failing or missing rank must end every rank's wait with a clear error, never a hang. */
class CollectiveFailureTest {

  @ParameterizedTest
  @EnumSource(AllReduceAlgorithm.class)
  void failingRankAbortsThePeersPromptly(AllReduceAlgorithm algorithm) {
    LocalWorld world =
        LocalWorld.create(
            LocalWorldConfig.of(5, algorithm)
                .withChunkElements(8)
                .withTimeout(Duration.ofSeconds(60)));
    long start = System.nanoTime();
    assertThatThrownBy(
            () ->
                world.run(
                    group -> {
                      float[] buf = new float[1000];
                      for (int i = 0; i < 20; i++) {
                        if (group.rank() == 2 && i == 7) {
                          throw new IllegalStateException("boom on rank 2");
                        }
                        group.allReduce(buf);
                      }
                    }))
        .isInstanceOf(CollectiveException.class)
        .hasMessageContaining("rank 2 failed")
        .hasRootCauseInstanceOf(IllegalStateException.class)
        .satisfies(
            e ->
                assertThat(e.getSuppressed())
                    .allSatisfy(
                        s -> assertThat(s).hasMessageContaining("aborted because rank 2 failed")));
    // Far below the 60 s timeout: peers were woken, not timed out.
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(10));
    assertThat(world.isAborted()).isTrue();
  }

  @Test
  void missingRankMakesPeersTimeOutWithAClearMessage() {
    LocalWorld world =
        LocalWorld.create(
            LocalWorldConfig.of(4, AllReduceAlgorithm.ONESHOT).withTimeout(Duration.ofMillis(300)));
    long start = System.nanoTime();
    assertThatThrownBy(
            () ->
                world.run(
                    group -> {
                      if (group.rank() != 3) { // rank 3 skips the collective
                        group.allReduce(new float[10]);
                      }
                    }))
        .isInstanceOf(CollectiveException.class)
        .rootCause()
        .hasMessageContaining("timed out after 300 ms in ALL_REDUCE waiting for rank 3");
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(10));
  }

  @Test
  void abortedWorldFailsLaterCollectivesAtOnce() {
    LocalWorld world = LocalWorld.create(2, AllReduceAlgorithm.RING);
    world.abort(-1, new RuntimeException("operator stop"));
    assertThatThrownBy(() -> world.group(0).barrier())
        .isInstanceOf(CollectiveException.class)
        .hasMessageContaining("operator stop");
    assertThatThrownBy(() -> world.group(1).allReduce(new float[4]))
        .isInstanceOf(CollectiveException.class);
  }

  @Test
  void mismatchedAllToAllCountsFailEveryRank() {
    LocalWorld world =
        LocalWorld.create(
            LocalWorldConfig.of(3, AllReduceAlgorithm.AUTO).withTimeout(Duration.ofSeconds(60)));
    long start = System.nanoTime();
    assertThatThrownBy(
            () ->
                world.run(
                    group -> {
                      int[] sendCounts = {1, 1, 1};
                      int[] recvCounts = group.rank() == 1 ? new int[] {1, 2, 1} : sendCounts;
                      group.allToAll(new float[3], sendCounts, new float[4], recvCounts);
                      group.barrier();
                    }))
        .isInstanceOf(CollectiveException.class)
        .rootCause()
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("recvCounts[1] = 2 but rank 1 sends 1");
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(10));
  }
}
