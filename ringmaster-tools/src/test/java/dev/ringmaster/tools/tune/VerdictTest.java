package dev.ringmaster.tools.tune;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringmaster.tools.benchserve.BenchServeResult;
import dev.ringmaster.tools.benchserve.DatasetRow;
import dev.ringmaster.tools.benchserve.RequestOutput;
import dev.ringmaster.tools.benchserve.ServingMetrics;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Medians, spreads, the winner-or-tie rule and the objectives on made-up measurements. */
class VerdictTest {
  private static TrialResult ok(String id, Double... samples) {
    List<Double> s = List.of(samples);
    return new TrialResult(
        id,
        Map.of(),
        "ok",
        "done",
        "",
        null,
        "",
        Stats.median(s),
        Map.of(),
        1.0,
        List.of(),
        "x.log",
        s,
        Stats.range(s));
  }

  private static TrialResult failed(String id) {
    return new TrialResult(
        id,
        Map.of(),
        "failed",
        "start-up",
        "crashed",
        1,
        "boom",
        null,
        Map.of(),
        1.0,
        List.of(),
        "x.log",
        List.of(),
        null);
  }

  @Test
  void medianAndRange() {
    assertThat(Stats.median(List.of(3.0, 1.0, 2.0))).isEqualTo(2.0);
    assertThat(Stats.median(List.of(4.0, 1.0, 2.0, 3.0))).isEqualTo(2.5);
    assertThat(Stats.range(List.of(3.0, 1.0, 2.5))).isEqualTo(2.0);
    assertThat(Stats.range(List.of(5.0))).isZero();
  }

  @Test
  void aWinnerMustBeatTheRunnerUpByMoreThanTheLargerSpread() {
    // medians 100 and 90; spreads 4 and 6: a gap of 10 beats a noise of 6
    Verdict v =
        Verdict.of(
            List.of(ok("b", 87.0, 90.0, 93.0), failed("f"), ok("a", 98.0, 100.0, 102.0)),
            Objective.throughput());
    assertThat(v.ranked()).extracting(TrialResult::id).containsExactly("a", "b");
    assertThat(v.winner().id()).isEqualTo("a");
    assertThat(Verdict.noise(v.ranked().get(0), v.ranked().get(1))).isEqualTo(6.0);
    assertThat(v.noNoiseEstimate()).isFalse();
  }

  @Test
  void withinTheNoiseTheyAreTiedAndNoWinnerIsDeclared() {
    // medians 100 and 95, spread of b is 12: tied; c at 70 is not
    Verdict v =
        Verdict.of(
            List.of(
                ok("a", 99.0, 100.0, 101.0), ok("b", 89.0, 95.0, 101.0), ok("c", 69.0, 70.0, 71.0)),
            Objective.throughput());
    assertThat(v.winner()).isNull();
    assertThat(v.tied()).extracting(TrialResult::id).containsExactly("a", "b");
    assertThat(v.best().id()).isEqualTo("a");
  }

  @Test
  void latencyRanksLowestFirst() {
    Verdict v =
        Verdict.of(
            List.of(ok("slow", 50.0, 51.0, 52.0), ok("fast", 20.0, 21.0, 22.0)),
            new Objective(Objective.Kind.LATENCY, null, null));
    assertThat(v.winner().id()).isEqualTo("fast");
  }

  @Test
  void oneRunEachDeclaresTheBestButSaysThereIsNoNoiseEstimate() {
    Verdict v = Verdict.of(List.of(ok("a", 10.0), ok("b", 10.5)), Objective.throughput());
    assertThat(v.winner().id()).isEqualTo("b");
    assertThat(v.noNoiseEstimate()).isTrue();
    assertThat(Verdict.of(List.of(failed("f")), Objective.throughput()).best()).isNull();
  }

  /** A request of {@code tokens} tokens: first after {@code ttftMs}, then {@code tpotMs} each. */
  private static RequestOutput request(double ttftMs, double tpotMs, int tokens) {
    double latency = (ttftMs + tpotMs * (tokens - 1)) / 1000;
    return new RequestOutput(true, "", 0, ttftMs / 1000, new double[0], latency, tokens, 4, "");
  }

  @Test
  void goodputCountsOnlyTheRequestsMeetingEverySlo() {
    List<RequestOutput> outs =
        List.of(
            request(100, 10, 11), // meets both
            request(900, 10, 11), // TTFT too slow
            request(100, 60, 11), // TPOT too slow
            new RequestOutput(false, "HTTP 500", 0, 0, new double[0], 0, 0, -1, ""));
    List<DatasetRow> rows = new ArrayList<>();
    for (int k = 0; k < outs.size(); k++) {
      rows.add(DatasetRow.text("p", 4, 11));
    }
    BenchServeResult r =
        new BenchServeResult(
            null, "m", rows, outs, ServingMetrics.of(rows, outs, 2.0, null), null, null);
    Objective both = new Objective(Objective.Kind.GOODPUT, 500.0, 50.0);
    assertThat(both.value(r)).isEqualTo(11 / 2.0);
    assertThat(both.attainment(r)).isEqualTo(0.25);
    Objective ttftOnly = new Objective(Objective.Kind.GOODPUT, 500.0, null);
    assertThat(ttftOnly.value(r)).isEqualTo(22 / 2.0);
    assertThat(Objective.throughput().value(r)).isEqualTo(33 / 2.0);
    assertThat(Objective.throughput().attainment(r)).isEqualTo(0.75);
    assertThat(new Objective(Objective.Kind.LATENCY, null, null).value(r))
        .isEqualTo(r.metrics().e2e().median());
  }

  @Test
  void badObjectivesAreRefusedByName() {
    assertThatThrownBy(() -> new Objective(Objective.Kind.GOODPUT, null, null))
        .hasMessageContaining("--slo-ttft-ms");
    assertThatThrownBy(() -> new Objective(Objective.Kind.THROUGHPUT, -1.0, null))
        .hasMessageContaining("--slo-ttft-ms must be above 0");
    assertThatThrownBy(() -> Objective.Kind.parse("speed"))
        .hasMessageContaining("throughput, goodput, latency (serve trials) or decode, prefill");
  }
}
