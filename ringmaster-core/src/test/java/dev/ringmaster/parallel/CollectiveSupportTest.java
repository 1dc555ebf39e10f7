package dev.ringmaster.parallel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import org.junit.jupiter.api.Test;

/** Splits, selection table, bandwidth factors and settings validation. */
class CollectiveSupportTest {

  @Test
  void evenSplitsCoverTheRangeWithSizesDifferingByAtMostOne() {
    for (int total = 0; total < 40; total++) {
      for (int parts = 1; parts <= 9; parts++) {
        int[] counts = Splits.even(total, parts);
        assertThat(Splits.sum(counts)).isEqualTo(total);
        for (int i = 0; i < parts; i++) {
          assertThat(Splits.evenOffset(total, parts, i)).isEqualTo(Splits.prefix(counts, i));
          assertThat(counts[i]).isBetween(total / parts, total / parts + 1);
        }
      }
    }
    assertThatThrownBy(() -> Splits.sum(new int[] {1, -1}))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void tableSelectsBySize() {
    AllReduceTable table = new AllReduceTable(100, 1000);
    assertThat(table.select(0)).isEqualTo(AllReduceAlgorithm.ONESHOT);
    assertThat(table.select(100)).isEqualTo(AllReduceAlgorithm.ONESHOT);
    assertThat(table.select(101)).isEqualTo(AllReduceAlgorithm.TWOSHOT);
    assertThat(table.select(1001)).isEqualTo(AllReduceAlgorithm.RING);
    assertThatThrownBy(() -> new AllReduceTable(10, 5))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void busBandwidthFactorsFollowNcclTests() {
    assertThat(CollectiveOp.ALL_REDUCE.busBandwidthFactor(8)).isCloseTo(1.75, within(1e-12));
    assertThat(CollectiveOp.ALL_GATHER.busBandwidthFactor(4)).isCloseTo(0.75, within(1e-12));
    assertThat(CollectiveOp.REDUCE_SCATTER.busBandwidthFactor(2)).isCloseTo(0.5, within(1e-12));
    assertThat(CollectiveOp.ALL_TO_ALL.busBandwidthFactor(8)).isCloseTo(0.875, within(1e-12));
    assertThat(CollectiveOp.BROADCAST.busBandwidthFactor(8)).isEqualTo(1);
    assertThat(CollectiveOp.ALL_REDUCE.busBandwidthFactor(1)).isZero();
  }

  @Test
  void configRejectsNonsense() {
    LocalWorldConfig ok = LocalWorldConfig.of(2, AllReduceAlgorithm.RING);
    assertThatThrownBy(() -> ok.withRingSlots(1)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> ok.withChunkElements(0)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> LocalWorld.create(0, AllReduceAlgorithm.RING))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> ok.withYieldNanos(-1)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> ok.withSpinIterations(-1))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void ranksSpinWithACoreEachAndYieldWhenTheyShareCores() {
    int cores = Runtime.getRuntime().availableProcessors();
    LocalWorldConfig fits = LocalWorldConfig.of(cores, AllReduceAlgorithm.RING);
    assertThat(fits.spinIterations()).isEqualTo(LocalWorldConfig.DEFAULT_SPIN_ITERATIONS);
    assertThat(fits.yieldNanos()).isZero();
    LocalWorldConfig shares = LocalWorldConfig.of(cores + 1, AllReduceAlgorithm.RING);
    assertThat(shares.spinIterations()).isZero();
    assertThat(shares.yieldNanos()).isEqualTo(LocalWorldConfig.DEFAULT_YIELD_NANOS);
  }
}
