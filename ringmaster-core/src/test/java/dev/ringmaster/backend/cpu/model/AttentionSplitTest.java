package dev.ringmaster.backend.cpu.model;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** Which (token, head) pairs of an attention call go to one parallel task. */
class AttentionSplitTest {
  @Test
  void decodeAndVerifyPassesSplitByHead() {
    // One decode token, and the 5 tokens of a verify pass with 4 drafts, on 2 threads.
    AttentionSplit decode = AttentionSplit.of(1, 8, 2);
    assertThat(decode.perTask()).isEqualTo(1);
    assertThat(decode.tasks()).isEqualTo(8);
    AttentionSplit verify = AttentionSplit.of(5, 8, 2);
    assertThat(verify.perTask()).isEqualTo(1);
    assertThat(verify.tasks()).isEqualTo(40);
  }

  @Test
  void prefillSplitsByTokenOnceEveryThreadHasManyTokens() {
    assertThat(AttentionSplit.of(15, 8, 2).perTask()).isEqualTo(1);
    AttentionSplit prefill = AttentionSplit.of(16, 8, 2);
    assertThat(prefill.perTask()).isEqualTo(8);
    assertThat(prefill.tasks()).isEqualTo(16);
    assertThat(AttentionSplit.of(128, 8, 2).tasks()).isEqualTo(128);
  }

  @Test
  void tasksCoverEveryPairOnce() {
    for (int tokens : new int[] {1, 5, 16, 37}) {
      AttentionSplit split = AttentionSplit.of(tokens, 8, 2);
      int next = 0;
      for (int task = 0; task < split.tasks(); task++) {
        assertThat(split.firstJob(task)).isEqualTo(next);
        next = split.endJob(task);
      }
      assertThat(next).isEqualTo(tokens * 8);
    }
  }
}
