package dev.ringmaster.runtime.sampling;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class PhiloxTest {
  @Test
  void matchesThePublishedKnownAnswer() {
    // Random123's kat_vectors: philox4x32_10, counter and key all ones (0xffffffff):
    // 408f276d 41c83b0e a20bc7c6 6d5451fd. Our counter's third word is the round, so
    // counter (ffffffff, ffffffff, ffffffff, 0) is not that vector; the all-zero one is:
    // counter 0, key 0 -> 6627e8d5 e169c58d bc57ac4c 9b00dbd8.
    assertThat(Philox.bits(0, 0, 0)).isEqualTo(0x6627e8d5);
  }

  @Test
  void uniformsAreInTheUnitIntervalAndSpread() {
    double sum = 0;
    int n = 100_000;
    for (int i = 0; i < n; i++) {
      double u = Philox.uniform(42, i, 0);
      assertThat(u).isGreaterThanOrEqualTo(0).isLessThan(1);
      sum += u;
    }
    assertThat(sum / n).isBetween(0.495, 0.505);
    assertThat(Philox.uniform(42, 5, 0)).isNotEqualTo(Philox.uniform(42, 5, 1));
    assertThat(Philox.uniform(42, 5, 0)).isNotEqualTo(Philox.uniform(43, 5, 0));
  }
}
