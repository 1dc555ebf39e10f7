package dev.ringmaster.tools.doctor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

/** Every verdict path of {@link Doctor}, on made-up device facts. */
class DoctorTest {
  private static final DoctorTarget ONE = DoctorTarget.defaults();

  private static FeatureCheck find(List<FeatureCheck> checks, String feature) {
    return checks.stream().filter(c -> c.feature().equals(feature)).findFirst().orElseThrow();
  }

  private static FeatureCheck check(GpuFacts g, DoctorTarget t, String feature) {
    return find(Doctor.check(FakeFacts.host(), g, t, null), feature);
  }

  private static DoctorTarget tp(int n) {
    return new DoctorTarget(n, 1, false, 8192, 0, 160, 0);
  }

  @Test
  void withoutGpuTheCpuSideIsOkAndEveryGpuFeatureSaysWhy() {
    List<FeatureCheck> all = Doctor.check(FakeFacts.host(), FakeFacts.noGpu(), ONE, null);
    assertThat(find(all, "cpu-engine").verdict()).isEqualTo(Verdict.OK);
    assertThat(find(all, "cpu-engine").reason()).contains("16 cores", "512-bit");
    assertThat(find(all, "cpu-collectives").verdict()).isEqualTo(Verdict.OK);
    FeatureCheck device = find(all, "cuda-device");
    assertThat(device.verdict()).isEqualTo(Verdict.UNSUPPORTED_HARDWARE);
    assertThat(device.reason()).contains("libcuda.so.1");
    assertThat(find(all, "gpu-kernels").verdict()).isEqualTo(Verdict.UNSUPPORTED_HARDWARE);
    assertThat(find(all, "cuda-graphs").verdict()).isEqualTo(Verdict.UNSUPPORTED_HARDWARE);
    assertThat(find(all, "cublas").verdict()).isEqualTo(Verdict.UNSUPPORTED_HARDWARE);
    assertThat(find(all, "allreduce-nccl").verdict()).isEqualTo(Verdict.UNSUPPORTED_SOFTWARE);
    assertThat(find(all, "fp8-tensor-cores").verdict()).isEqualTo(Verdict.UNSUPPORTED_HARDWARE);
    // quantized checkpoints and sparse attention have CPU kernels
    assertThat(find(all, "fp8-weights").verdict()).isEqualTo(Verdict.OK);
    assertThat(find(all, "nvfp4-weights").reason()).contains("on the CPU");
    assertThat(find(all, "sparse-attention").verdict()).isEqualTo(Verdict.OK);
    assertThat(all).allSatisfy(c -> assertThat(c.reason()).isNotBlank().doesNotContain("\n"));
  }

  @Test
  void driverThatCannotStartIsASoftwareProblem() {
    GpuFacts g =
        GpuFacts.none(
            "the NVIDIA driver is installed but CUDA cannot start (999)",
            "13.0",
            List.of("sm_90"),
            List.of());
    assertThat(check(g, ONE, "cuda-device").verdict()).isEqualTo(Verdict.UNSUPPORTED_SOFTWARE);
  }

  @Test
  void hopperRunsTheKernelsGraphsAndPdl() {
    GpuFacts g = FakeFacts.gpus(1, 90, "X", false, true);
    assertThat(check(g, ONE, "cuda-device").verdict()).isEqualTo(Verdict.OK);
    assertThat(check(g, ONE, "gpu-kernels").verdict()).isEqualTo(Verdict.OK);
    assertThat(check(g, ONE, "cuda-graphs").verdict()).isEqualTo(Verdict.OK);
    assertThat(check(g, ONE, "pdl").verdict()).isEqualTo(Verdict.OK);
    assertThat(check(g, ONE, "cublas").verdict()).isEqualTo(Verdict.OK);
    assertThat(check(g, ONE, "cublas").reason()).contains("13.1.0");
  }

  @Test
  void ampereCannotRunTheKernels() {
    GpuFacts g = FakeFacts.gpus(1, 80, "X", false, true);
    FeatureCheck k = check(g, ONE, "gpu-kernels");
    assertThat(k.verdict()).isEqualTo(Verdict.UNSUPPORTED_HARDWARE);
    assertThat(k.reason()).contains("sm_80", "sm_90");
    assertThat(check(g, ONE, "pdl").verdict()).isEqualTo(Verdict.UNSUPPORTED_HARDWARE);
    assertThat(check(g, ONE, "cuda-graphs").verdict()).isEqualTo(Verdict.UNSUPPORTED_HARDWARE);
    assertThat(check(g, ONE, "fp8-tensor-cores").verdict()).isEqualTo(Verdict.UNSUPPORTED_HARDWARE);
  }

  @Test
  void blackwellIsUntestedAndHasFp8AndFp4HardwareButNoPath() {
    GpuFacts g = FakeFacts.gpus(1, 120, "X", false, true);
    assertThat(check(g, ONE, "gpu-kernels").verdict()).isEqualTo(Verdict.UNTESTED);
    assertThat(check(g, ONE, "gpu-kernels").reason()).contains("sm_120 SASS");
    assertThat(check(g, ONE, "pdl").verdict()).isEqualTo(Verdict.UNTESTED);
    assertThat(check(g, ONE, "cuda-graphs").verdict()).isEqualTo(Verdict.UNTESTED);
    assertThat(check(g, ONE, "fp8-tensor-cores").verdict()).isEqualTo(Verdict.UNSUPPORTED_SOFTWARE);
    assertThat(check(g, ONE, "fp4-tensor-cores").verdict()).isEqualTo(Verdict.UNSUPPORTED_SOFTWARE);
    GpuFacts b200 = FakeFacts.gpus(1, 100, "X", false, true);
    assertThat(check(b200, ONE, "gpu-kernels").reason()).contains("compute_90 PTX");
    GpuFacts h200 = FakeFacts.gpus(1, 90, "X", false, true);
    assertThat(check(h200, ONE, "fp4-tensor-cores").verdict())
        .isEqualTo(Verdict.UNSUPPORTED_HARDWARE);
  }

  @Test
  void kernelsBuiltWithoutNvccOrForANewerDriverAreSoftwareProblems() {
    GpuFacts h = FakeFacts.gpus(1, 90, "X", false, true);
    GpuFacts noKernels =
        new GpuFacts(
            "",
            13000,
            "580",
            "absent",
            List.of(),
            h.gpus(),
            h.libraries(),
            h.topology(),
            h.ncclVersion(),
            List.of());
    assertThat(check(noKernels, ONE, "gpu-kernels").verdict())
        .isEqualTo(Verdict.UNSUPPORTED_SOFTWARE);
    GpuFacts oldDriver =
        new GpuFacts(
            "",
            12040,
            "550",
            "13.0",
            h.kernelTargets(),
            h.gpus(),
            h.libraries(),
            h.topology(),
            h.ncclVersion(),
            List.of());
    FeatureCheck k = check(oldDriver, ONE, "gpu-kernels");
    assertThat(k.verdict()).isEqualTo(Verdict.UNSUPPORTED_SOFTWARE);
    assertThat(k.reason()).contains("CUDA 13.0", "12.4");
  }

  @Test
  void ncclNeedsTheLibraryAndTwoGpus() {
    assertThat(check(FakeFacts.gpus(2, 90, "NV18", true, false), tp(2), "allreduce-nccl").verdict())
        .isEqualTo(Verdict.UNSUPPORTED_SOFTWARE);
    assertThat(check(FakeFacts.gpus(1, 90, "X", false, true), ONE, "allreduce-nccl").verdict())
        .isEqualTo(Verdict.UNSUPPORTED_HARDWARE);
    FeatureCheck ok = check(FakeFacts.gpus(2, 90, "NV18", true, true), tp(2), "allreduce-nccl");
    assertThat(ok.verdict()).isEqualTo(Verdict.OK);
    assertThat(ok.reason()).contains("2.28.3", "NV18");
  }

  @Test
  void peerKernelsOnNvlinkAndOnTwoPcieGpusAreOk() {
    for (String algo : List.of("allreduce-oneshot", "allreduce-twoshot", "allreduce-fused")) {
      assertThat(check(FakeFacts.gpus(8, 90, "NV18", true, true), tp(8), algo).verdict())
          .isEqualTo(Verdict.OK);
      assertThat(check(FakeFacts.gpus(2, 90, "PIX", true, true), tp(2), algo).verdict())
          .isEqualTo(Verdict.OK);
    }
  }

  @Test
  void peerKernelsAreRefusedOnMoreThanTwoPcieGpusUnlessMeasuredFaster() {
    GpuFacts pcie = FakeFacts.gpus(8, 90, "PIX", true, true);
    FeatureCheck refused = check(pcie, tp(8), "allreduce-oneshot");
    assertThat(refused.verdict()).isEqualTo(Verdict.UNSUPPORTED_HARDWARE);
    assertThat(refused.reason()).contains("8 PCIe-only", "doctor --measure");
    GpuFacts slower = withTable(pcie, new GpuFacts.MeasuredTable(8, false, "above: NCCL"));
    assertThat(check(slower, tp(8), "allreduce-oneshot").reason())
        .contains("measured: above: NCCL");
    GpuFacts faster =
        withTable(pcie, new GpuFacts.MeasuredTable(8, true, "<= 65536 B: ONESHOT, above: NCCL"));
    assertThat(check(faster, tp(8), "allreduce-oneshot").verdict()).isEqualTo(Verdict.OK);
    // a table for another world size says nothing about this one
    GpuFacts other = withTable(pcie, new GpuFacts.MeasuredTable(4, true, "<= 1 B: ONESHOT"));
    assertThat(check(other, tp(8), "allreduce-oneshot").verdict())
        .isEqualTo(Verdict.UNSUPPORTED_HARDWARE);
  }

  @Test
  void peerKernelsNeedPeerAccessEnoughGpusAndAWorkingCopy() {
    FeatureCheck noPeer =
        check(FakeFacts.gpus(2, 90, "SYS", false, true), tp(2), "allreduce-twoshot");
    assertThat(noPeer.verdict()).isEqualTo(Verdict.UNSUPPORTED_HARDWARE);
    assertThat(noPeer.reason()).contains("GPU0 cannot access GPU1");
    assertThat(check(FakeFacts.gpus(2, 90, "NV18", true, true), tp(4), "allreduce-fused").reason())
        .contains("this host has 2");
    GpuFacts g = FakeFacts.gpus(2, 90, "NV18", true, true);
    GpuFacts.Topology t = g.topology();
    GpuFacts.Topology broken =
        new GpuFacts.Topology(
            t.labels(),
            t.peerAccess(),
            List.of(List.of("self", "failed: mismatch at byte 0"), List.of("ok", "self")),
            t.pcieOnly(),
            t.matrix());
    GpuFacts bad =
        new GpuFacts(
            "",
            13000,
            "580",
            "13.0",
            g.kernelTargets(),
            g.gpus(),
            g.libraries(),
            broken,
            g.ncclVersion(),
            List.of());
    FeatureCheck c = check(bad, tp(2), "allreduce-oneshot");
    assertThat(c.verdict()).isEqualTo(Verdict.UNSUPPORTED_HARDWARE);
    assertThat(c.reason()).contains("GPU1 -> GPU0 failed");
  }

  @Test
  void allToAllNeedsNcclGpusAndRoomForItsBuffers() {
    DoctorTarget ep8 = new DoctorTarget(8, 8, true, 8192, 4096, 160, 0);
    assertThat(
            check(FakeFacts.gpus(8, 90, "NV18", true, false), ep8, "expert-all-to-all").verdict())
        .isEqualTo(Verdict.UNSUPPORTED_SOFTWARE);
    assertThat(check(FakeFacts.gpus(4, 90, "NV18", true, true), ep8, "expert-all-to-all").verdict())
        .isEqualTo(Verdict.UNSUPPORTED_HARDWARE);
    GpuFacts g = FakeFacts.gpus(8, 90, "NV18", true, true);
    assertThat(check(g, ep8, "expert-all-to-all").verdict()).isEqualTo(Verdict.OK);
    ModelNeeds small = needs(10 * FakeFacts.GIB, 2 * FakeFacts.GIB);
    FeatureCheck fits = find(Doctor.check(FakeFacts.host(), g, ep8, small), "expert-all-to-all");
    assertThat(fits.verdict()).isEqualTo(Verdict.OK);
    assertThat(fits.reason()).contains("2.0 GiB", "8192", "fit in 139.0 GiB free");
    ModelNeeds big = needs(130 * FakeFacts.GIB, 20 * FakeFacts.GIB);
    FeatureCheck over = find(Doctor.check(FakeFacts.host(), g, ep8, big), "expert-all-to-all");
    assertThat(over.verdict()).isEqualTo(Verdict.UNSUPPORTED_HARDWARE);
    assertThat(over.reason()).contains("lower --chunked-prefill-size");
  }

  @Test
  void sparseAttentionQuantizedWeightsAndMultiNodeGpuSayWhatIsMissing() {
    GpuFacts g = FakeFacts.gpus(2, 90, "NV18", true, true);
    assertThat(check(g, ONE, "sparse-attention").verdict()).isEqualTo(Verdict.OK);
    for (String f : List.of("sparse-attention", "fp8-weights", "nvfp4-weights")) {
      FeatureCheck tp2 = check(g, tp(2), f);
      assertThat(tp2.verdict()).as(f).isEqualTo(Verdict.UNSUPPORTED_SOFTWARE);
      assertThat(tp2.reason()).as(f).contains("--tp-size 1 --ep-size 1");
      assertThat(check(g, ONE, f).verdict()).as(f).isEqualTo(Verdict.OK);
      // where the GPU cannot run the kernels, neither runs these
      assertThat(check(FakeFacts.gpus(1, 80, "X", false, true), ONE, f).verdict())
          .as(f)
          .isEqualTo(Verdict.UNSUPPORTED_HARDWARE);
    }
    assertThat(check(g, ONE, "fp8-tensor-cores").reason()).contains("no e4m3 MMA path");
    assertThat(check(g, ONE, "multi-node-gpu").verdict()).isEqualTo(Verdict.UNTESTED);
    assertThat(check(FakeFacts.gpus(2, 90, "NV18", true, false), ONE, "multi-node-gpu").verdict())
        .isEqualTo(Verdict.UNSUPPORTED_SOFTWARE);
  }

  @Test
  void reasonsAreOneLine() {
    assertThatThrownBy(() -> new FeatureCheck("x", Verdict.OK, "two\nlines"))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> new FeatureCheck("x", Verdict.OK, " "))
        .isInstanceOf(IllegalArgumentException.class);
  }

  static ModelNeeds needs(double weights, double a2a) {
    return new ModelNeeds(
        "m",
        "deepseek_v2",
        true,
        false,
        1000,
        4096,
        weights,
        FakeFacts.GIB,
        FakeFacts.GIB,
        12,
        a2a,
        70_000,
        (long) weights,
        140_000);
  }

  private static GpuFacts withTable(GpuFacts g, GpuFacts.MeasuredTable t) {
    return new GpuFacts(
        g.problem(),
        g.cudaDriverVersion(),
        g.driverVersion(),
        g.kernelsNvcc(),
        g.kernelTargets(),
        g.gpus(),
        g.libraries(),
        g.topology(),
        g.ncclVersion(),
        List.of(t));
  }

  @Test
  void everyVerdictOnEveryKindOfHostHasAOneLineReasonNamingItsFeature() {
    // a blank or multi-line reason throws in FeatureCheck; this sweeps the fact combinations
    java.util.List<GpuFacts> hosts = new java.util.ArrayList<>(List.of(FakeFacts.noGpu()));
    for (int n : new int[] {1, 2, 4, 8}) {
      for (int cc : new int[] {80, 89, 90, 100, 120}) {
        for (String link : new String[] {"NV18", "PIX", "SYS", "?"}) {
          hosts.add(FakeFacts.gpus(n, cc, link, true, true));
          hosts.add(FakeFacts.gpus(n, cc, link, false, false));
        }
      }
    }
    for (GpuFacts g : hosts) {
      for (DoctorTarget t :
          List.of(ONE, tp(2), tp(8), new DoctorTarget(8, 8, true, 8192, 4096, 160, 0))) {
        List<FeatureCheck> checks = Doctor.check(FakeFacts.host(), g, t, null);
        assertThat(checks).isNotEmpty();
        for (FeatureCheck c : checks) {
          assertThat(c.reason()).as(c.feature()).isNotBlank().doesNotContain("\n");
          assertThat(c.reason()).as(c.feature()).doesNotContain("null");
        }
      }
    }
  }
}
