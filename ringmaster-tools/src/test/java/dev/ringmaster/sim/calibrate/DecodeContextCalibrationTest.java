package dev.ringmaster.sim.calibrate;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.sim.Configs;
import dev.ringmaster.sim.calibrate.CalibrationCheck.Row;
import dev.ringmaster.sim.hw.GpuSpec;
import dev.ringmaster.sim.hw.HardwareProfile;
import dev.ringmaster.sim.hw.Profiles;
import dev.ringmaster.sim.model.ModelShape;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Objects;
import org.junit.jupiter.api.Test;

/**
 * Decode time grows with the cached context faster than attention's bytes say (MLA decode at one
 * sequence runs far below the memory rate), which the per-context-token latency carries. The
 * samples are two one-batch runs of the same engine build on one H200
 * (benchmarks/history-archive.jsonl.gz): commit f2f72fe at input 512, batch 1/8/32/128, and commit
 * acd7126 (same kernels) at input 4096, batch 1.
 */
class DecodeContextCalibrationTest {
  private static final ModelShape V2_LITE = Configs.load("deepseek-v2-lite");
  private static final String SHORT = "h200-v2lite-onebatch-f2f72fe.json";
  private static final String LONG = "h200-v2lite-onebatch-input4096-acd7126.json";

  private static MeasurementFile.OneBatch sample(String name) throws Exception {
    try (var in = DecodeContextCalibrationTest.class.getResourceAsStream("/calibrate/" + name)) {
      String json = new String(Objects.requireNonNull(in).readAllBytes(), StandardCharsets.UTF_8);
      return (MeasurementFile.OneBatch) MeasurementsIo.parseAny(json);
    }
  }

  private static HardwareProfile fit(List<MeasurementFile> runs) {
    return BenchCalibration.calibrate(Profiles.load("h200"), runs, r -> V2_LITE, "h200-mine")
        .profile();
  }

  @Test
  void oneContextLengthLeavesTheTermUnfittedAndMissesTheLongContext() throws Exception {
    HardwareProfile p = fit(List.of(sample(SHORT)));
    assertThat(p.gpu().decodeContextTokenLayerNs()).isZero();
    CalibrationCheck longRun = CalibrationCheck.of(p, List.of(sample(LONG)), r -> V2_LITE);
    // the 4096-token step is predicted 18% fast: the roofline's attention bytes are most of it
    assertThat(longRun.rows().getFirst().errorPct()).isGreaterThan(15);
  }

  @Test
  void twoContextLengthsFitTheTermAndHoldEveryPointToTenPercent() throws Exception {
    List<MeasurementFile> runs = List.of(sample(SHORT), sample(LONG));
    HardwareProfile p = fit(runs);
    GpuSpec g = p.gpu();
    // ~1.8 ns per sequence, cached token and layer: 7.3 us per layer at 4,104 cached tokens
    assertThat(g.decodeContextTokenLayerNs()).isBetween(1.0, 3.0);
    assertThat(g.decodeTokenLayerUs()).isGreaterThanOrEqualTo(0);
    assertThat(g.stepOverheadUs()).isGreaterThanOrEqualTo(0);
    CalibrationCheck check = CalibrationCheck.of(p, runs, r -> V2_LITE);
    assertThat(check.rows()).hasSize(5);
    for (Row row : check.rows()) {
      assertThat(Math.abs(row.errorPct())).as(row.what()).isLessThanOrEqualTo(10);
    }
  }
}
