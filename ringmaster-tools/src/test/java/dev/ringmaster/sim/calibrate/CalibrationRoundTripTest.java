package dev.ringmaster.sim.calibrate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.ringmaster.sim.hw.AllreduceAlgorithm;
import dev.ringmaster.sim.hw.AlphaBeta;
import dev.ringmaster.sim.hw.CollectiveModel;
import dev.ringmaster.sim.hw.CollectiveSpec;
import dev.ringmaster.sim.hw.GpuSpec;
import dev.ringmaster.sim.hw.HardwareProfile;
import dev.ringmaster.sim.hw.Interconnect;
import dev.ringmaster.sim.hw.PeerKernel;
import dev.ringmaster.sim.hw.Profiles;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class CalibrationRoundTripTest {

  /** A "true" machine whose constants differ from the shipped profile's. */
  static HardwareProfile truth(HardwareProfile base) {
    GpuSpec g = base.gpu().withConstants(0.71, 0.58, 0.63, 0.47, 6.3, 1.7, 10.0, 420.0);
    Map<String, AlphaBeta> nccl = new LinkedHashMap<>();
    base.collectives()
        .nccl()
        .forEach(
            (k, v) ->
                nccl.put(
                    k, new AlphaBeta(v.baseUs() * 1.3, v.hopUs() * 0.8, v.busBandwidth() * 0.77)));
    AlphaBeta a2a = base.collectives().allToAll();
    CollectiveSpec c =
        base.collectives()
            .withModels(
                nccl, new AlphaBeta(a2a.baseUs() + 3, a2a.hopUs(), a2a.busBandwidth() * 1.2));
    Interconnect ic = base.interconnect();
    Interconnect tic =
        new Interconnect(
            ic.type(),
            ic.pcieGen(),
            ic.pcieLanes(),
            ic.linkBandwidth(),
            ic.gpuSocket(),
            ic.gpuSwitch(),
            ic.crossSocketBandwidth(),
            0.42,
            11.0,
            null);
    return new HardwareProfile(
        base.name() + "-truth",
        base.description(),
        base.sources(),
        base.assumptions(),
        base.gpuCount(),
        g,
        tic,
        c);
  }

  @Test
  void recoversExactConstantsFromNoiselessMeasurements() {
    HardwareProfile base = Profiles.load("rtx-pro-6000-x8");
    HardwareProfile truth = truth(base);
    Measurements m = SyntheticMeasurements.generate(truth, 0, 1);
    HardwareProfile fit = Calibrator.calibrate(base, m, "fitted").profile();
    assertClose(fit, truth, 1e-6);
  }

  @Test
  void recoversConstantsWithinAFewPercentUnderNoise() {
    HardwareProfile base = Profiles.load("h200-x8");
    HardwareProfile truth = truth(base);
    Measurements m = SyntheticMeasurements.generate(truth, 0.02, 7);
    Calibrator.Result r = Calibrator.calibrate(base, m, "fitted");
    assertThat(r.fitted()).isNotEmpty();
    GpuSpec f = r.profile().gpu();
    GpuSpec t = truth.gpu();
    assertThat(f.gemmMemoryEfficiency()).isCloseTo(t.gemmMemoryEfficiency(), within(0.02));
    assertThat(f.moeMemoryEfficiency()).isCloseTo(t.moeMemoryEfficiency(), within(0.02));
    assertThat(f.computeEfficiency()).isCloseTo(t.computeEfficiency(), within(0.02));
    assertThat(f.graphNodeUs()).isCloseTo(t.graphNodeUs(), within(0.1));
    AlphaBeta ll = r.profile().collectives().nccl().get("ring/LL");
    AlphaBeta tll = truth.collectives().nccl().get("ring/LL");
    assertThat(ll.busBandwidth() / tll.busBandwidth()).isCloseTo(1.0, within(0.05));
  }

  @Test
  void measurementFileRoundTripsThroughJson() throws Exception {
    Measurements m = SyntheticMeasurements.generate(Profiles.load("h200-x8"), 0, 3);
    String json = MeasurementsIo.toJson(m);
    assertThat(json).contains("\"time_us\"").contains("\"step_time_us\"");
    assertThat(MeasurementsIo.parse(json)).isEqualTo(m);
  }

  /**
   * The fitted one-shot and two-shot kernels equal the truth's (its uncalibrated model: launch plus
   * one or two barriers, one read efficiency), fitted each on its own.
   */
  static void assertPeerClose(HardwareProfile fit, HardwareProfile truth, double tol) {
    CollectiveModel fitted = new CollectiveModel(fit);
    CollectiveModel expected = new CollectiveModel(truth);
    assertThat(fit.collectives().peer()).containsKeys("oneshot", "twoshot");
    for (AllreduceAlgorithm a : List.of(AllreduceAlgorithm.ONESHOT, AllreduceAlgorithm.TWOSHOT)) {
      PeerKernel f = fitted.peerKernel(a);
      PeerKernel t = expected.peerKernel(a);
      assertThat(f.latencyUs()).as(a.cliName()).isCloseTo(t.latencyUs(), within(1e-3));
      assertThat(f.readEfficiency()).as(a.cliName()).isCloseTo(t.readEfficiency(), within(tol));
    }
  }

  private static void assertClose(HardwareProfile fit, HardwareProfile truth, double tol) {
    GpuSpec f = fit.gpu();
    GpuSpec t = truth.gpu();
    assertThat(f.gemmMemoryEfficiency()).isCloseTo(t.gemmMemoryEfficiency(), within(tol));
    assertThat(f.moeMemoryEfficiency()).isCloseTo(t.moeMemoryEfficiency(), within(tol));
    assertThat(f.attentionMemoryEfficiency()).isCloseTo(t.attentionMemoryEfficiency(), within(tol));
    assertThat(f.computeEfficiency()).isCloseTo(t.computeEfficiency(), within(tol));
    assertThat(f.kernelLaunchUs()).isCloseTo(t.kernelLaunchUs(), within(tol));
    assertThat(f.graphNodeUs()).isCloseTo(t.graphNodeUs(), within(tol));
    assertThat(f.stepOverheadUs()).isCloseTo(t.stepOverheadUs(), within(1e-3));
    assertPeerClose(fit, truth, tol);
    truth
        .collectives()
        .nccl()
        .forEach(
            (k, v) -> {
              AlphaBeta a = fit.collectives().nccl().get(k);
              assertThat(a.baseUs()).as(k).isCloseTo(v.baseUs(), within(1e-3));
              assertThat(a.hopUs()).as(k).isCloseTo(v.hopUs(), within(1e-3));
              assertThat(a.busBandwidth() / v.busBandwidth()).as(k).isCloseTo(1.0, within(1e-6));
            });
    AlphaBeta a2a = fit.collectives().allToAll();
    assertThat(a2a.baseUs()).isCloseTo(truth.collectives().allToAll().baseUs(), within(1e-3));
  }
}
