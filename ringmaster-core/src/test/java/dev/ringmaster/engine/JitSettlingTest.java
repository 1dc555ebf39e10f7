package dev.ringmaster.engine;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class JitSettlingTest {
  /** Fake clocks: each round takes roundMillis of wall time and the given compilation time. */
  private static final class Clocks {
    long nanos;
    long compileMillis;
    long roundMillis = 100;

    void round(JitSettling s, long compiledMillis) {
      s.startRound();
      nanos += roundMillis * 1_000_000L;
      compileMillis += compiledMillis;
      s.endRound();
    }
  }

  @Test
  void settlesOnlyAfterAWholeQuietWindow() {
    Clocks c = new Clocks();
    JitSettling s = new JitSettling(() -> c.compileMillis, () -> c.nanos, true);
    for (int i = 0; i < JitSettling.WINDOW - 1; i++) {
      c.round(s, 0);
      assertThat(s.settled()).as("round %d: fewer rounds than the window", i).isFalse();
    }
    c.round(s, 0);
    assertThat(s.settled()).isTrue();
    // A burst (one 700 ms C2 compile) stays in the window until WINDOW quiet rounds follow it.
    c.round(s, 700);
    for (int i = 0; i < JitSettling.WINDOW; i++) {
      assertThat(s.settled()).as("burst still in the window after %d quiet rounds", i).isFalse();
      c.round(s, 0);
    }
    assertThat(s.settled()).isTrue();
  }

  @Test
  void theShareIsOfTheWindowsWallTime() {
    Clocks c = new Clocks();
    JitSettling s = new JitSettling(() -> c.compileMillis, () -> c.nanos, true);
    // 2% of 10 rounds of 100 ms is 20 ms: 19 ms over the window settles, 21 does not.
    for (int i = 0; i < JitSettling.WINDOW; i++) {
      c.round(s, i == 0 ? 19 : 0);
    }
    assertThat(s.settled()).isTrue();
    for (int i = 0; i < JitSettling.WINDOW; i++) {
      c.round(s, i == 0 ? 21 : 0);
    }
    assertThat(s.settled()).isFalse();
  }

  /** Rounds of a second each settle over the shortest window: 3 rounds. */
  @Test
  void longRoundsSettleOverTheShortestWindow() {
    Clocks c = new Clocks();
    c.roundMillis = 1000;
    JitSettling s = new JitSettling(() -> c.compileMillis, () -> c.nanos, true);
    c.round(s, 500);
    c.round(s, 0);
    c.round(s, 0);
    assertThat(s.settled()).as("the burst is in the last 3 rounds").isFalse();
    c.round(s, 0);
    assertThat(s.settled()).isTrue();
    // 2% of 3 s is 60 ms
    c.round(s, 70);
    c.round(s, 0);
    c.round(s, 0);
    assertThat(s.settled()).isFalse();
    c.round(s, 0);
    assertThat(s.settled()).isTrue();
  }

  @Test
  void neverSettlesWhereCompilationTimeIsNotReported() {
    Clocks c = new Clocks();
    JitSettling s = new JitSettling(() -> 0, () -> c.nanos, false);
    for (int i = 0; i < 3 * JitSettling.WINDOW; i++) {
      c.round(s, 0);
    }
    assertThat(s.settled()).isFalse();
  }
}
