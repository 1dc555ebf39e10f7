package dev.ringmaster.sim.calibrate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.ringmaster.sim.calibrate.CalibrationCheck.Row;
import dev.ringmaster.sim.calibrate.Measurements.CollectiveSample;
import dev.ringmaster.sim.hw.HardwareProfile;
import dev.ringmaster.sim.hw.HostCollectives;
import dev.ringmaster.sim.hw.HostLine;
import dev.ringmaster.sim.hw.Profiles;
import dev.ringmaster.sim.report.CheckText;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class CalibrationCheckTest {

  @Test
  void fittedProfileReproducesNoiselessMeasurements() {
    HardwareProfile base = Profiles.load("rtx-pro-6000-x8");
    HardwareProfile truth = CalibrationRoundTripTest.truth(base);
    Measurements m = SyntheticMeasurements.generate(truth, 0, 1);
    HardwareProfile fitted = Calibrator.calibrate(base, m, "fitted").profile();
    List<MeasurementFile> files = List.of(new MeasurementFile.Native(m));
    CalibrationCheck before = CalibrationCheck.of(base, files, run -> null);
    CalibrationCheck after = CalibrationCheck.of(fitted, files, run -> null);
    assertThat(after.rows())
        .hasSize(m.collectives().size() + m.kernels().size() + m.steps().size());
    assertThat(after.rows()).allMatch(Row::predictedAtAll);
    assertThat(after.maxAbsErrorPct()).isLessThan(1e-6);
    // the base profile's constants differ from the truth's by up to 30%: the check sees it
    assertThat(before.maxAbsErrorPct()).isGreaterThan(10);
    assertThat(after.maxAbsErrorPctByKind())
        .containsOnlyKeys("allreduce", "alltoall", "kernel", "step");
  }

  @Test
  void errorIsSignedPercentOfTheMeasurement() {
    Row r = new Row("allreduce", "x", Map.of(), "us", 80, 100);
    assertThat(r.errorPct()).isCloseTo(25, within(1e-12));
    CalibrationCheck c =
        new CalibrationCheck(
            "p",
            List.of(
                r,
                new Row("decode", "y", Map.of(), "tok/s", 100, 70),
                new Row("alltoall", "z", Map.of(), "us", 10, Double.NaN)));
    assertThat(c.maxAbsErrorPct()).isCloseTo(30, within(1e-12));
    assertThat(c.maxAbsErrorPctByKind()).containsOnlyKeys("allreduce", "decode");
    assertThat(CheckText.text(c)).contains("+25.0%").contains("-30.0%").contains("no model");
    assertThat(CheckText.json(c))
        .contains("\"max_abs_error_pct\" : 30.0")
        .contains("\"error_pct\" : null");
  }

  @Test
  void hostFitRecoversLinesPerAlgorithmAndRankCount() {
    HardwareProfile base = Profiles.load("cpu-host");
    // a plain line, one whose slope triples past 256 KiB (working set out of the caches), and
    // one with two cache levels: faster past 64 KiB, slower past 4 MiB
    Map<String, HostLine> truth =
        Map.of(
            "ring/2", new HostLine(20, 1.5e9, 0, 1.5e9),
            "oneshot/4", new HostLine(40, 1.2e9, 262144, 0.4e9),
            "recursive_doubling/2", new HostLine(1, 3e9, 65536, 2e9, 4194304, 6e9));
    List<CollectiveSample> s = new ArrayList<>();
    truth.forEach(
        (k, ab) -> {
          String algo = k.substring(0, k.indexOf('/'));
          int n = Integer.parseInt(k.substring(k.indexOf('/') + 1));
          for (double b = 256; b <= 1 << 24; b *= 4) {
            s.add(new CollectiveSample("allreduce", algo, null, n, b, ab.timeUs(b)));
          }
        });
    Measurements m = new Measurements(null, null, 4, s, List.of(), List.of());
    HardwareProfile fitted = Calibrator.calibrate(base, m, "fitted").profile();
    HostCollectives host = fitted.collectives().host();
    assertThat(host.allreduce().get("ring/2").baseUs()).isCloseTo(20, within(1e-6));
    assertThat(host.allreduce().get("ring/2").memoryBandwidth()).isCloseTo(1.5e9, within(1.0));
    HostLine one = host.allreduce().get("oneshot/4");
    assertThat(one.kneeBytes()).isEqualTo(262144);
    assertThat(one.cachedBandwidth()).isCloseTo(1.2e9, within(1.0));
    assertThat(one.memoryBandwidth()).isCloseTo(0.4e9, within(1.0));
    HostLine two = host.allreduce().get("recursive_doubling/2");
    assertThat(two.kneeBytes()).isEqualTo(65536);
    assertThat(two.secondKneeBytes()).isEqualTo(4194304);
    assertThat(two.middleBandwidth()).isCloseTo(6e9, within(1e3));
    assertThat(two.memoryBandwidth()).isCloseTo(2e9, within(1e3));
    // pairs without samples keep the base profile's constants
    assertThat(host.allreduce().get("twoshot/2"))
        .isEqualTo(base.collectives().host().allreduce().get("twoshot/2"));
    CalibrationCheck check =
        CalibrationCheck.of(fitted, List.of(new MeasurementFile.Native(m)), run -> null);
    assertThat(check.maxAbsErrorPct()).isLessThan(1e-6);
  }
}
