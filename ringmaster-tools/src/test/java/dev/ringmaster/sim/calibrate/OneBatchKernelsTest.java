package dev.ringmaster.sim.calibrate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.ringmaster.sim.Configs;
import dev.ringmaster.sim.calibrate.CalibrationCheck.Row;
import dev.ringmaster.sim.calibrate.Measurements.KernelSample;
import dev.ringmaster.sim.hw.GpuSpec;
import dev.ringmaster.sim.hw.HardwareProfile;
import dev.ringmaster.sim.hw.Profiles;
import dev.ringmaster.sim.model.ModelShape;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Objects;
import org.junit.jupiter.api.Test;

/**
 * The op-group breakdown of a profiled one-batch run ({@code profile_ms}) fits the kernel
 * efficiencies: the run is V2-Lite at TP 1 on an H200 (commit 51d46e4), batch 1/8/32, with the
 * eager step profile the same run printed (fixtures' README).
 */
class OneBatchKernelsTest {
  private static final ModelShape V2_LITE = Configs.load("deepseek-v2-lite");

  private static MeasurementFile.OneBatch sample(String name) throws Exception {
    try (var in = OneBatchKernelsTest.class.getResourceAsStream("/calibrate/" + name)) {
      String json = new String(Objects.requireNonNull(in).readAllBytes(), StandardCharsets.UTF_8);
      return (MeasurementFile.OneBatch) MeasurementsIo.parseAny(json);
    }
  }

  @Test
  void everyProfiledBatchGivesOneSamplePerKind() throws Exception {
    List<KernelSample> ks =
        OneBatchKernels.samples(
            sample("h200-x2-v2lite-onebatch-tp1-auto-profiled-51d46e4.json"),
            V2_LITE,
            Profiles.load("h200"));
    assertThat(ks).hasSize(9);
    assertThat(ks).extracting(KernelSample::kind).containsOnly("moe", "attention", "gemm");
    assertThat(ks).allMatch(k -> k.bytes() > 0 && k.timeUs() > 0);
    // batch 32's routed experts: 7.75 ms of the eager step
    assertThat(ks)
        .filteredOn(k -> k.name().equals("moe.routed_experts (batch 32)"))
        .singleElement()
        .satisfies(k -> assertThat(k.timeUs()).isEqualTo(7747.0));
  }

  @Test
  void sharedExpertsOverlappedOnTheSideStreamCountWithTheRoutedExperts() throws Exception {
    String name = "h200-x2-v2lite-onebatch-tp1-auto-profiled-51d46e4.json";
    String json;
    try (var in = OneBatchKernelsTest.class.getResourceAsStream("/calibrate/" + name)) {
      json = new String(Objects.requireNonNull(in).readAllBytes(), StandardCharsets.UTF_8);
    }
    // The batch-1 step as a side-stream profile shows it: the shared experts inside the routed
    // experts' group.
    String overlapped =
        json.replace("\"moe.shared_experts\":0.554,", "")
            .replace("\"moe.routed_experts\":1.618", "\"moe.routed_and_shared_experts\":2.172");
    assertThat(overlapped).isNotEqualTo(json);
    HardwareProfile h200 = Profiles.load("h200");
    List<KernelSample> inline = OneBatchKernels.samples(sample(name), V2_LITE, h200);
    List<KernelSample> aside =
        OneBatchKernels.samples(
            (MeasurementFile.OneBatch) MeasurementsIo.parseAny(overlapped), V2_LITE, h200);
    KernelSample moeInline = byName(inline, "moe.routed_experts (batch 1)");
    KernelSample moeAside = byName(aside, "moe.routed_experts (batch 1)");
    KernelSample gemmInline = byName(inline, "mla.q_kv_rope_append (batch 1)");
    KernelSample gemmAside = byName(aside, "mla.q_kv_rope_append (batch 1)");
    double moved = moeAside.bytes() - moeInline.bytes();
    assertThat(moved).isPositive();
    assertThat(gemmInline.bytes() - gemmAside.bytes()).isCloseTo(moved, within(1.0));
    assertThat(gemmInline.timeUs() - gemmAside.timeUs()).isCloseTo(554.0, within(1e-6));
    assertThat(moeAside.timeUs()).isCloseTo(2172.0, within(1e-6));
    // other batch sizes keep their inline profiles
    assertThat(byName(aside, "moe.routed_experts (batch 8)").bytes())
        .isEqualTo(byName(inline, "moe.routed_experts (batch 8)").bytes());
  }

  private static KernelSample byName(List<KernelSample> ks, String name) {
    return ks.stream().filter(k -> k.name().equals(name)).findFirst().orElseThrow();
  }

  @Test
  void anUnprofiledRunGivesNone() throws Exception {
    assertThat(
            OneBatchKernels.samples(
                sample("h200-x2-v2lite-onebatch-tp1-auto-51d46e4.json"),
                V2_LITE,
                Profiles.load("h200")))
        .isEmpty();
  }

  @Test
  void theFittedEfficienciesReadAsTheKernelsDoAndDecodeHolds() throws Exception {
    MeasurementFile.OneBatch run = sample("h200-x2-v2lite-onebatch-tp1-auto-profiled-51d46e4.json");
    HardwareProfile p =
        BenchCalibration.calibrate(Profiles.load("h200"), List.of(run), r -> V2_LITE, "h200-mine")
            .profile();
    GpuSpec g = p.gpu();
    // the grouped experts stream near their bytes (kernel bench: 0.78-0.81 from batch 8 on); MLA
    // decode over a 576-token cache runs far below them (the split kernel's ~0.3-0.6 TB/s)
    assertThat(g.moeMemoryEfficiency()).isBetween(0.5, 1.0);
    assertThat(g.attentionMemoryEfficiency()).isBetween(0.01, 0.2);
    assertThat(g.gemmMemoryEfficiency()).isBetween(0.05, 1.0);
    for (Row row : CalibrationCheck.of(p, List.of(run), r -> V2_LITE).rows()) {
      if (row.kind().equals("decode")) {
        assertThat(Math.abs(row.errorPct())).as(row.what()).isLessThanOrEqualTo(15);
      }
    }
  }
}
