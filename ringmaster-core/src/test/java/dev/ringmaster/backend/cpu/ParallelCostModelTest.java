package dev.ringmaster.backend.cpu;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.assertj.core.data.Offset;
import org.junit.jupiter.api.Test;

/** The parallel-or-serial decision follows the measured region cost and the learned work rate. */
class ParallelCostModelTest {
  /** A model that never sees the JIT compiling. */
  private static ParallelCostModel quiet(int threads, double regionNanos) {
    return new ParallelCostModel(threads, regionNanos, () -> false);
  }

  @Test
  void serialUntilAProductHasBeenTimed() {
    assertThat(quiet(2, 1000).pays(1e12)).isFalse();
  }

  @Test
  void parallelWhenTheTimeSavedExceedsTheRegionCost() {
    ParallelCostModel m = quiet(2, 2000);
    m.observe(1000, 1000, false); // 1 ns per unit
    // two threads save half the time: 0.5 * cost against a 2000 ns region
    assertThat(m.pays(3900)).isFalse();
    assertThat(m.pays(4100)).isTrue();
    ParallelCostModel four = quiet(4, 2000);
    four.observe(1000, 1000, false);
    assertThat(four.pays(3000)).as("four threads save three quarters").isTrue();
  }

  @Test
  void slowParallelRegionsRaiseTheRegionCost() {
    ParallelCostModel m = quiet(2, 2000);
    m.observe(10_000, 5000, false); // 0.5 ns per unit: 2500 ns per thread for 10_000 units
    m.observe(10_000, 2500 + 6000, true); // the region took 6 us beyond its work
    assertThat(m.nanosPerCost()).isCloseTo(0.5, Offset.offset(1e-12));
    assertThat(m.regionNanos()).isCloseTo(2000 + 0.05 * 4000, Offset.offset(1e-9));
  }

  @Test
  void oneVerySlowRegionCountsForAtMostFourTimesTheEstimate() {
    ParallelCostModel m = quiet(2, 2000);
    m.observe(10_000, 5000, false);
    m.observe(10_000, 2500 + 9_000_000, true); // a region timed while the JIT compiled it
    assertThat(m.regionNanos()).isCloseTo(2000 + 0.05 * (4 * 2000 - 2000), Offset.offset(1e-9));
  }

  @Test
  void aSlowRegionWhileTheJitCompilesIsDropped() {
    int[] asked = {0};
    ParallelCostModel m =
        new ParallelCostModel(
            2,
            2000,
            () -> {
              asked[0]++;
              return true;
            });
    m.observe(10_000, 5000, false); // 0.5 ns per unit
    m.observe(10_000, 2500 + 9_000_000, true); // timed while a compiler thread had the core
    assertThat(m.regionNanos()).isEqualTo(2000);
    m.observe(10_000, 2500 + 3000, true); // an ordinary region is not checked
    assertThat(asked[0]).isEqualTo(1);
    assertThat(m.regionNanos()).isCloseTo(2000 + 0.05 * 1000, Offset.offset(1e-9));
  }

  @Test
  void slowRegionsWhileTheJitIsQuietRaiseTheEstimate() {
    ParallelCostModel m = quiet(2, 2000);
    m.observe(10_000, 5000, false);
    for (int i = 0; i < 100; i++) {
      m.observe(10_000, 2500 + 1_000_000, true); // a busy machine: workers wait for a core
    }
    assertThat(m.regionNanos()).isGreaterThan(100_000);
    assertThat(m.pays(100_000)).as("25 us saved against a slow region").isFalse();
  }

  @Test
  void aRegionEstimateLeftHighIsRetimedAndComesBackDown() {
    ParallelCostModel m = quiet(2, 2000);
    m.observe(100_000, 100_000, false); // 1 ns per unit
    for (int i = 0; i < 200; i++) {
      m.observe(100_000, 50_000 + 1_000_000, true); // a slow spell: every region is slow
    }
    assertThat(m.pays(100_000)).as("50 us saved against the raised estimate").isFalse();
    int parallel = 0;
    for (int i = 0; i < 100 * ParallelCostModel.EXPLORE_EVERY; i++) {
      if (m.parallel(100_000)) {
        parallel++;
        m.observe(100_000, 50_000 + 2000, true); // regions are cheap again
      }
    }
    assertThat(parallel).isGreaterThan(100);
    assertThat(m.pays(100_000)).isTrue();
    assertThat(m.regionNanos()).isLessThan(10_000);
  }

  @Test
  void someProductsThatWouldGoParallelRunSeriallyToKeepTimingTheRate() {
    ParallelCostModel m = quiet(2, 0);
    m.observe(1, 1, false);
    int serial = 0;
    for (int i = 0; i < 10 * ParallelCostModel.EXPLORE_EVERY; i++) {
      serial += m.parallel(1000) ? 0 : 1;
    }
    assertThat(serial).isEqualTo(10);
  }

  @Test
  void oneThreadNeverGoesParallel() {
    ParallelCostModel m = quiet(1, 0);
    m.observe(1, 1_000_000, false);
    assertThat(m.pays(1e12)).isFalse();
  }

  @Test
  void aPoolMeasuresItsRegionCost() {
    try (CpuThreadPool pool = new CpuThreadPool(2)) {
      assertThat(pool.costModel().regionNanos()).isPositive().isLessThan(1e8);
    }
    try (CpuThreadPool pool = new CpuThreadPool(1)) {
      assertThat(pool.costModel().regionNanos()).isZero();
    }
  }

  @Test
  void rejectsNonsense() {
    assertThatThrownBy(() -> new ParallelCostModel(0, 1))
        .hasMessageContaining("threads must be at least 1");
    assertThatThrownBy(() -> new ParallelCostModel(2, Double.NaN))
        .hasMessageContaining("region cost non-negative");
  }
}
