package dev.ringmaster.sim.hw;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import org.junit.jupiter.api.Test;

/** Host allreduce lines worked by hand. */
class HostLineTest {

  @Test
  void oneKneeChargesEachSideAtItsRate() {
    HostLine l = new HostLine(10, 1e9, 1e6, 0.5e9);
    assertThat(l.twoKnees()).isFalse();
    assertThat(l.timeUs(0)).isEqualTo(10);
    assertThat(l.timeUs(1e6)).isCloseTo(10 + 1000, within(1e-9));
    assertThat(l.timeUs(3e6)).isCloseTo(10 + 1000 + 4000, within(1e-9));
  }

  @Test
  void twoKneesChargeTheMiddleAtItsOwnRate() {
    // 1 MB at 1 GB/s, 3 MB at 3 GB/s, the rest at 0.5 GB/s
    HostLine l = new HostLine(2, 1e9, 1e6, 0.5e9, 4e6, 3e9);
    assertThat(l.twoKnees()).isTrue();
    assertThat(l.timeUs(0.5e6)).isCloseTo(2 + 500, within(1e-9));
    assertThat(l.timeUs(2.5e6)).isCloseTo(2 + 1000 + 500, within(1e-9));
    assertThat(l.timeUs(5e6)).isCloseTo(2 + 1000 + 1000 + 2000, within(1e-9));
  }

  @Test
  void profilesWithoutASecondKneeReadAsOneKnee() {
    // the shipped cpu-host profile may hold either form; a line saved without the second knee
    // fields reads back with 0 there
    HostLine l = new HostLine(10, 1e9, 1e6, 0.5e9, 0, 0);
    assertThat(l).isEqualTo(new HostLine(10, 1e9, 1e6, 0.5e9));
    assertThat(l.timeUs(3e6)).isCloseTo(5010, within(1e-9));
  }
}
