package dev.ringmaster.cuda.collective;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** How many collectives one timed iteration queues, by message size (no GPU needed). */
class RankTimerBatchTest {
  @Test
  void smallMessagesAreTimedInBatchesOf32AndLargeOnesAlone() {
    assertThat(RankTimer.batchFor(1)).isEqualTo(32);
    assertThat(RankTimer.batchFor(1 << 10)).isEqualTo(32);
    assertThat(RankTimer.batchFor(1 << 20)).isEqualTo(32);
    assertThat(RankTimer.batchFor(2L << 20)).isEqualTo(16);
    assertThat(RankTimer.batchFor(8L << 20)).isEqualTo(4);
    assertThat(RankTimer.batchFor(32L << 20)).isEqualTo(1);
    assertThat(RankTimer.batchFor(256L << 20)).isEqualTo(1);
    assertThat(RankTimer.batchFor(0)).isEqualTo(32);
  }
}
