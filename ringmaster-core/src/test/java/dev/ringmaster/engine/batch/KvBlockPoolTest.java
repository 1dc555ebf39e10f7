package dev.ringmaster.engine.batch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class KvBlockPoolTest {
  @Test
  void reservesUpToCapacityAndReleases() {
    KvBlockPool pool = new KvBlockPool(16, 4);
    assertThat(pool.blocksFor(0)).isZero();
    assertThat(pool.blocksFor(1)).isEqualTo(1);
    assertThat(pool.blocksFor(16)).isEqualTo(1);
    assertThat(pool.blocksFor(17)).isEqualTo(2);
    assertThat(pool.tryReserve(3)).isTrue();
    assertThat(pool.tryReserve(2)).isFalse();
    assertThat(pool.free()).isEqualTo(1);
    pool.release(3);
    assertThat(pool.used()).isZero();
    assertThat(pool.capacityTokens()).isEqualTo(64);
  }

  @Test
  void rejectsOverRelease() {
    KvBlockPool pool = new KvBlockPool(16, 4);
    pool.tryReserve(1);
    assertThatThrownBy(() -> pool.release(2)).isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> new KvBlockPool(0, 4)).isInstanceOf(IllegalArgumentException.class);
  }
}
