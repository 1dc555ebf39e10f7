package dev.ringmaster.engine.spec;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** The auto policy's decisions from an injected cost model and observed acceptance. */
class SpeculationControllerTest {
  /** Decode costs 1 ms at any batch; a verify of k drafts costs {@code 1 + slope k} ms. */
  private static SpeculationCostModel linear(double slope) {
    return TabulatedSpeculationCost.linear(new int[] {1}, new double[] {1e6}, slope, 4);
  }

  private static SpeculationController auto(double slope) {
    return new SpeculationController(
        SpeculativeAlgorithm.NGRAM, SpeculativePolicy.AUTO, 4, 0.05, linear(slope));
  }

  @Test
  void startsOnAndSwitchesOffWhereVerifyingCostsMoreThanAcceptanceGives() {
    // The measured CPU case: a 4-draft verify costs 2.9 decode steps.
    SpeculationController c = auto(0.475);
    assertThat(c.decide(1)).as("acceptance unknown: try").isEqualTo(4);
    for (int i = 0; i < 200; i++) {
      c.observe(4, i % 2); // accept length about 1.5
    }
    int on = 0;
    for (int i = 0; i < 1000; i++) {
      on += c.decide(1) > 0 ? 1 : 0;
    }
    // Only the probes, one step in PROBE_INTERVAL, still speculate.
    assertThat(on).isEqualTo(1000 / SpeculationController.PROBE_INTERVAL);
    assertThat(c.snapshot().enabled()).isFalse();
  }

  @Test
  void staysOnWhereVerifyIsCheapAndPicksTheBestLength() {
    SpeculationController c = auto(0.05);
    for (int i = 0; i < 200; i++) {
      c.observe(4, 4);
    }
    assertThat(c.decide(8)).isEqualTo(4);
    // Only the first draft position is ever accepted: one draft token is the best length.
    SpeculationController first = auto(0.2);
    for (int i = 0; i < 400; i++) {
      first.observe(4, 1);
    }
    assertThat(first.decide(1)).isEqualTo(1);
  }

  @Test
  void neverProbesWhereEvenPerfectDraftsCannotPay() {
    // A 4-draft verify costs 6 decode steps: 5 tokens can never beat it.
    SpeculationController c = auto(1.25);
    for (int i = 0; i < 100; i++) {
      c.observe(4, 0);
    }
    for (int i = 0; i < 3 * SpeculationController.PROBE_INTERVAL; i++) {
      assertThat(c.decide(1)).isZero();
    }
    assertThat(c.snapshot().enabledFraction()).isZero();
  }

  @Test
  void draftingTimeCountsAgainstSpeculation() {
    SpeculationController c = auto(0.05);
    for (int i = 0; i < 200; i++) {
      c.observe(4, 2);
    }
    assertThat(c.peek(1)).isPositive();
    c.observeDraftTime(4_000_000, 4); // 1 ms per draft token: a draft step costs a decode step
    assertThat(c.peek(1)).isZero();
  }

  @Test
  void alwaysDraftsAndCountsAcceptLength() {
    SpeculationController c =
        new SpeculationController(
            SpeculativeAlgorithm.NGRAM, SpeculativePolicy.ALWAYS, 3, 0.05, null);
    assertThat(c.decide(64)).isEqualTo(3);
    c.observe(3, 2);
    c.observe(2, 0);
    SpeculationSnapshot s = c.snapshot();
    assertThat(s.acceptLength()).isEqualTo(2.0);
    assertThat(s.draftTokens()).isEqualTo(5);
    assertThat(s.enabledFraction()).isEqualTo(1.0);
  }

  @Test
  void refusesAutoWithoutCostsAndBadMargins() {
    assertThatThrownBy(
            () ->
                new SpeculationController(
                    SpeculativeAlgorithm.NGRAM, SpeculativePolicy.AUTO, 3, 0.05, null))
        .hasMessageContaining("cost model");
    assertThatThrownBy(
            () ->
                new SpeculationController(
                    SpeculativeAlgorithm.NGRAM, SpeculativePolicy.AUTO, 3, -1, linear(0.1)))
        .hasMessageContaining("margin");
  }

  @Test
  void costTableInterpolatesAndExtrapolates() {
    TabulatedSpeculationCost t =
        new TabulatedSpeculationCost(
            new int[] {1, 4}, new double[] {10, 40}, new double[][] {{20, 30}, {60, 100}}, 2);
    assertThat(t.decodeNanos(1)).isEqualTo(10);
    assertThat(t.decodeNanos(2)).isEqualTo(20);
    assertThat(t.decodeNanos(8)).isEqualTo(80);
    assertThat(t.verifyNanos(1, 2)).isEqualTo(30);
    assertThat(t.verifyNanos(1, 1)).isEqualTo(20);
    assertThat(t.verifyNanos(2, 2))
        .isCloseTo(30 + 70.0 / 3, org.assertj.core.api.Assertions.within(1e-9));
    assertThat(t.verifyNanos(8, 1)).isEqualTo(120);
    assertThatThrownBy(() -> t.verifyNanos(1, 3)).hasMessageContaining("1..2");
    assertThat(TabulatedSpeculationCost.batchSizesFor(6)).containsExactly(1, 2, 4, 6);
    assertThat(TabulatedSpeculationCost.batchSizesFor(1)).containsExactly(1);
    assertThat(TabulatedSpeculationCost.batchSizesFor(256))
        .containsExactly(1, 2, 4, 8, 16, 32, 64, 128);
  }
}
