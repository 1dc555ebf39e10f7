package dev.ringmaster.sim.calibrate;

import static dev.ringmaster.sim.calibrate.CalibrationFixtures.file;
import static dev.ringmaster.sim.calibrate.CalibrationFixtures.files;
import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.sim.Configs;
import dev.ringmaster.sim.calibrate.CalibrationCheck.Row;
import dev.ringmaster.sim.hw.HardwareProfile;
import dev.ringmaster.sim.hw.Profiles;
import dev.ringmaster.sim.model.ModelShape;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * Calibration on four NVLink-connected H200s (fixtures' README): the graphed allreduce sweep at
 * world size 4 and {@code bench one-batch} of the DeepSeek-V2-Lite shape at TP 1, 2 and 4 under
 * each allreduce choice, fitted from {@code h200-x8} as {@code simulate calibrate} does; the
 * GLM-5-shaped model of 5 layers at TP 1, 2 and 4 is the held-out check. One profile has to explain
 * all three tensor-parallel sizes, which a bandwidth-only kernel fit could not (decode errors of
 * -31% at TP 1 and +25% at TP 4): a TP 4 kernel reads a quarter of the bytes in far more than a
 * quarter of the time. The criteria: every collective point within ±20%, decode tok/s
 * within ±15%.
 */
class H200x4CalibrationTest {
  private static final ModelShape V2_LITE = Configs.load("deepseek-v2-lite");
  private static final ModelShape GLM5_5L = Configs.load("glm5-shape-5-layers");
  private static final String GRAPH = "h200-x4-allreduce-nvlink-graph-da9a8b2.json";
  // Runs whose allreduce the fixed fused kernel (da9a8b2) serves come from that commit; the
  // others from 17b812e (same engine apart from the peer kernels).
  private static final List<String> V2_LITE_RUNS =
      List.of(
          "h200-x4-v2lite-onebatch-tp1-auto-17b812e.json",
          "h200-x4-v2lite-onebatch-tp2-auto-17b812e.json",
          "h200-x4-v2lite-onebatch-tp2-nccl-17b812e.json",
          "h200-x4-v2lite-onebatch-tp2-oneshot-da9a8b2.json",
          "h200-x4-v2lite-onebatch-tp2-twoshot-17b812e.json",
          "h200-x4-v2lite-onebatch-tp4-nccl-17b812e.json",
          "h200-x4-v2lite-onebatch-tp4-twoshot-17b812e.json",
          "h200-x4-v2lite-onebatch-tp4-oneshot-da9a8b2.json",
          "h200-x4-v2lite-onebatch-tp4-auto-da9a8b2.json");
  private static final List<String> GLM5_RUNS =
      List.of(
          "h200-x4-glm5-5l-onebatch-tp1-auto-17b812e.json",
          "h200-x4-glm5-5l-onebatch-tp2-nccl-17b812e.json",
          "h200-x4-glm5-5l-onebatch-tp4-nccl-17b812e.json",
          "h200-x4-glm5-5l-onebatch-tp4-twoshot-17b812e.json",
          "h200-x4-glm5-5l-onebatch-tp4-oneshot-da9a8b2.json");

  private static Calibrator.Result calibrated() throws Exception {
    return BenchCalibration.calibrate(
        Profiles.load("h200-x8"), files(GRAPH, V2_LITE_RUNS), run -> V2_LITE, "h200-x4");
  }

  @Test
  void everyGraphedAllreducePointIsWithinTwentyPercent() throws Exception {
    CalibrationCheck check =
        CalibrationCheck.of(calibrated().profile(), List.of(file(GRAPH)), run -> null);
    assertThat(check.rows()).hasSize(4 * 19);
    Map<String, Double> worst = new TreeMap<>();
    for (Row r : check.rows()) {
      assertThat(Math.abs(r.errorPct())).as(r.what()).isLessThanOrEqualTo(20);
      worst.merge((String) r.fields().get("algorithm"), Math.abs(r.errorPct()), Math::max);
    }
    // what this fixture's fit reaches (docs/multi-gpu.md), so that a worse fit fails
    assertThat(worst)
        .hasEntrySatisfying("nccl", e -> assertThat(e).isLessThan(6))
        .hasEntrySatisfying("oneshot", e -> assertThat(e).isLessThan(8))
        .hasEntrySatisfying("twoshot", e -> assertThat(e).isLessThan(6.5))
        .hasEntrySatisfying("fused", e -> assertThat(e).isLessThan(18));
  }

  @Test
  void decodeOfV2LiteAtTp1Tp2AndTp4IsWithinFifteenPercent() throws Exception {
    CalibrationCheck check =
        CalibrationCheck.of(calibrated().profile(), files(null, V2_LITE_RUNS), run -> V2_LITE);
    assertThat(check.rows()).hasSize(V2_LITE_RUNS.size() * 3);
    for (Row r : check.rows()) {
      assertThat(Math.abs(r.errorPct())).as(r.what()).isLessThanOrEqualTo(15);
    }
    assertThat(check.rows()).anyMatch(r -> r.what().startsWith("TP 4 oneshot, batch 1"));
  }

  @Test
  void theHeldOutGlm5ShapeIsPredictedWithinSeventeenPercent() throws Exception {
    HardwareProfile fitted = calibrated().profile();
    CalibrationCheck check = CalibrationCheck.of(fitted, files(null, GLM5_RUNS), run -> GLM5_5L);
    assertThat(check.rows()).hasSize(GLM5_RUNS.size() * 3);
    // 5 layers against V2-Lite's 27, hidden 6144 against 2048: TP 4 batch 8 is the worst (predicted
    // fast by 14.3-16.8% under each allreduce), against 23-36% before the host share of a step was
    // measured rather than fitted (it was charged to the graph nodes, of which this model has few)
    for (Row r : check.rows()) {
      assertThat(Math.abs(r.errorPct())).as(r.what()).isLessThanOrEqualTo(17);
    }
  }

  @Test
  void aFixedTimePerKernelIsFittedBesideTheBandwidth() throws Exception {
    Calibrator.Result r = calibrated();
    // one kernel fit for TP 1, 2 and 4: the fixed part is reported, and the bandwidth efficiency
    // of the dense weights is no longer dragged to ~0.14 by the TP 4 kernels
    assertThat(r.fitted()).anyMatch(l -> l.startsWith("kernels: fixed time per eager kernel"));
    // the TP 1 run's profiled graph replay gives the host's share of a step directly
    assertThat(r.fitted()).anyMatch(l -> l.contains("measured (wall less the profiled graph"));
    assertThat(r.profile().gpu().stepOverheadUs()).isBetween(100.0, 400.0);
    assertThat(r.profile().gpu().gemmMemoryEfficiency()).isBetween(0.4, 1.0);
    assertThat(r.profile().gpu().moeMemoryEfficiency()).isBetween(0.4, 1.0);
    assertThat(r.profile().gpu().graphNodeUs()).isPositive();
  }
}
