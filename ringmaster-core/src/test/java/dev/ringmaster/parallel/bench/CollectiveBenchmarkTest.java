package dev.ringmaster.parallel.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ringmaster.parallel.AllReduceAlgorithm;
import dev.ringmaster.parallel.CollectiveOp;
import java.awt.image.BufferedImage;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** The benchmark on tiny sizes: results checked, bandwidth arithmetic, table, JSON and PNG. */
class CollectiveBenchmarkTest {

  private static BenchmarkOptions small(CollectiveOp op) {
    return BenchmarkOptions.defaults(3, op)
        .withAlgorithms(List.of(AllReduceAlgorithm.RING, AllReduceAlgorithm.ONESHOT))
        .withBytes(16, 4096)
        .withIterations(1, 3);
  }

  @ParameterizedTest
  @EnumSource(
      value = CollectiveOp.class,
      names = {"BARRIER"},
      mode = EnumSource.Mode.EXCLUDE)
  void everyOperationMeasuresCorrectResults(CollectiveOp op) {
    List<BenchmarkResult> results = CollectiveBenchmark.run(small(op));
    int series = op == CollectiveOp.ALL_REDUCE ? 2 : 1;
    assertThat(results).hasSizeGreaterThanOrEqualTo(series * 6);
    for (BenchmarkResult r : results) {
      assertThat(r.correct()).as("%s %s %d B", r.op(), r.label(), r.bytes()).isTrue();
      assertThat(r.timeMicros()).isPositive();
      assertThat(r.algBandwidthGBps()).isCloseTo(r.bytes() / r.timeMicros() / 1e3, within(1e-9));
      assertThat(r.busBandwidthGBps())
          .isCloseTo(r.algBandwidthGBps() * op.busBandwidthFactor(3), within(1e-9));
    }
    assertThat(results.getLast().bytes()).isLessThanOrEqualTo(4096);
  }

  @Test
  void writesTableJsonAndPlot(@TempDir Path dir) throws Exception {
    List<BenchmarkResult> results = CollectiveBenchmark.run(small(CollectiveOp.ALL_REDUCE));

    String table = CollectiveBenchmark.formatTable(results);
    assertThat(table).contains("ALL_REDUCE, 3 ranks", "busbw(GB/s)", "RING", "ONESHOT");
    assertThat(table).doesNotContain("WRONG");

    JsonNode json = new ObjectMapper().readTree(CollectiveBenchmark.toJson(results));
    assertThat(json.isArray()).isTrue();
    assertThat(json).hasSize(results.size());
    assertThat(json.get(0).get("algorithm").asText()).isEqualTo("RING");
    assertThat(json.get(0).get("bytes").asLong()).isEqualTo(16);
    assertThat(json.get(0).has("busBandwidthGBps")).isTrue();

    assertThat(CollectiveBenchmark.fromJson(CollectiveBenchmark.toJson(results)))
        .isEqualTo(results);

    Path png = dir.resolve("allreduce.png");
    BusBandwidthPlot.write(results, png);
    BufferedImage image = ImageIO.read(png.toFile());
    assertThat(image.getWidth()).isEqualTo(900);
    assertThat(image.getHeight()).isEqualTo(600);
  }

  @Test
  void trialsReportTheSmallestMedianAndKeepEveryTrial() {
    List<BenchmarkResult> results =
        CollectiveBenchmark.run(small(CollectiveOp.ALL_REDUCE).withTrials(3));
    for (BenchmarkResult r : results) {
      assertThat(r.correct()).isTrue();
      // three at least; more only while the two smallest disagree, up to four times as many
      assertThat(r.trialMicros()).hasSizeBetween(3, 12);
      if (r.trialMicros().size() > 3) {
        assertThat(TrialPolicy.agreed(r.trialMicros().subList(0, r.trialMicros().size() - 1)))
            .isFalse();
      }
      assertThat(r.timeMicros()).isEqualTo(TrialPolicy.figure(r.trialMicros()));
      assertThat(r.trialMicros()).contains(r.timeMicros());
      assertThat(r.statistic())
          .isEqualTo("smallest of 3-12 trial medians of 3 iterations confirmed within 10%");
    }
    assertThat(CollectiveBenchmark.formatTable(results))
        .contains("time: smallest of 3-12 trial medians of 3 iterations confirmed within 10%");
    assertThat(CollectiveBenchmark.fromJson(CollectiveBenchmark.toJson(results)))
        .isEqualTo(results);
  }

  @Test
  void trialPolicyStopsOnceTheTwoSmallestAgree() {
    assertThat(TrialPolicy.needsAnother(List.of(10.0, 10.5), 3)).isTrue();
    assertThat(TrialPolicy.needsAnother(List.of(10.0, 30.0, 10.9), 3)).isFalse();
    assertThat(TrialPolicy.needsAnother(List.of(10.0, 30.0, 11.2), 3)).isTrue();
    List<Double> neverAgree = new ArrayList<>();
    for (int i = 0; i < 12; i++) {
      neverAgree.add(Math.pow(2, i));
    }
    assertThat(TrialPolicy.needsAnother(neverAgree.subList(0, 11), 3)).isTrue();
    assertThat(TrialPolicy.needsAnother(neverAgree, 3)).isFalse();
    // a lone fast trial is not the figure; the smallest that another confirms is
    assertThat(TrialPolicy.figure(List.of(3.0, 1.0, 2.0, 2.1, 9.0))).isEqualTo(2.0);
    assertThat(TrialPolicy.figure(List.of(1.0, 1.05, 2.0))).isEqualTo(1.0);
    // nothing confirmed: the smallest
    assertThat(TrialPolicy.figure(List.of(3.0, 1.0, 2.0))).isEqualTo(1.0);
    assertThat(TrialPolicy.needsAnother(List.of(7.0), 1)).isFalse();
  }

  @Test
  void oneTrialIsThePlainMedian() {
    List<BenchmarkResult> results = CollectiveBenchmark.run(small(CollectiveOp.ALL_GATHER));
    assertThat(results)
        .allSatisfy(
            r -> {
              assertThat(r.statistic()).isEqualTo("median of 3 iterations");
              assertThat(r.trialMicros()).containsExactly(r.timeMicros());
            });
  }

  @Test
  void readsResultsWrittenBeforeTrialsExisted() {
    String old =
        "[{\"op\":\"ALL_REDUCE\",\"algorithm\":\"RING\",\"worldSize\":2,\"bytes\":256,"
            + "\"timeMicros\":21.4,\"algBandwidthGBps\":0.012,\"busBandwidthGBps\":0.012,"
            + "\"correct\":true}]";
    BenchmarkResult r = CollectiveBenchmark.fromJson(old).getFirst();
    assertThat(r.timeMicros()).isEqualTo(21.4);
    assertThat(r.statistic()).isEqualTo("median");
    assertThat(r.trialMicros()).isEmpty();
  }

  @Test
  void parsesByteSuffixes() {
    assertThat(CollectiveBenchmark.parseBytes("256")).isEqualTo(256);
    assertThat(CollectiveBenchmark.parseBytes("4K")).isEqualTo(4096);
    assertThat(CollectiveBenchmark.parseBytes("16m")).isEqualTo(16L << 20);
  }
}
