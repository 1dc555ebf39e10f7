package dev.ringmaster.tools.doctor;

import static dev.ringmaster.tools.doctor.FakeFacts.GIB;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The {@code --model} checks and the exit-status rule, on made-up needs and the embedded model. */
class ModelFitTest {
  private static final DoctorTarget ONE = DoctorTarget.defaults();

  private static ModelNeeds needs(boolean mla, double weights, int context, double kvPerToken) {
    return new ModelNeeds(
        "m",
        mla ? "deepseek_v2" : "qwen3_moe",
        mla,
        false,
        1000,
        context,
        weights,
        GIB,
        GIB,
        12,
        0,
        kvPerToken,
        (long) weights,
        2 * kvPerToken);
  }

  private static FeatureCheck find(List<FeatureCheck> checks, String feature) {
    return checks.stream().filter(c -> c.feature().equals(feature)).findFirst().orElseThrow();
  }

  @Test
  void gpuMemoryFitsOrSaysWhichPartDoesNot() {
    GpuFacts g = FakeFacts.gpus(1, 90, "X", false, true);
    HostFacts h = FakeFacts.host();
    FeatureCheck fits = ModelFit.gpuMemory(g, ONE, needs(true, 30 * GIB, 32768, 70_000));
    assertThat(fits.verdict()).isEqualTo(Verdict.OK);
    assertThat(fits.reason()).contains("weights 30.0 GiB", "32768 tokens", "sequences");
    FeatureCheck weights = ModelFit.gpuMemory(g, ONE, needs(true, 150 * GIB, 4096, 70_000));
    assertThat(weights.verdict()).isEqualTo(Verdict.UNSUPPORTED_HARDWARE);
    assertThat(weights.reason()).contains("raise --tp-size");
    FeatureCheck kv = ModelFit.gpuMemory(g, ONE, needs(true, 100 * GIB, 1 << 20, 70_000));
    assertThat(kv.verdict()).isEqualTo(Verdict.UNSUPPORTED_HARDWARE);
    assertThat(kv.reason()).contains("lower --context-length");
    DoctorTarget fraction = new DoctorTarget(1, 1, false, 8192, 0, 160, 0.2);
    assertThat(ModelFit.gpuMemory(g, fraction, needs(true, 30 * GIB, 4096, 70_000)).reason())
        .contains("--mem-fraction-static 0.20");
    DoctorTarget tp2 = new DoctorTarget(2, 1, false, 8192, 0, 160, 0);
    assertThat(ModelFit.gpuMemory(g, tp2, needs(true, GIB, 4096, 1)).verdict())
        .isEqualTo(Verdict.UNSUPPORTED_HARDWARE);
    assertThat(
            find(ModelFit.check(h, g, ONE, needs(false, GIB, 4096, 1)), "model-architecture")
                .verdict())
        .isEqualTo(Verdict.UNSUPPORTED_SOFTWARE);
  }

  @Test
  void cpuMemoryChecksTheWeightFilesAndTheHeap() {
    HostFacts h = FakeFacts.host();
    assertThat(ModelFit.cpuMemory(h, needs(true, GIB, 4096, 1000)).verdict()).isEqualTo(Verdict.OK);
    FeatureCheck files = ModelFit.cpuMemory(h, needs(true, 200 * GIB, 4096, 1000));
    assertThat(files.verdict()).isEqualTo(Verdict.UNSUPPORTED_HARDWARE);
    assertThat(files.reason()).contains("host memory available");
    FeatureCheck heap = ModelFit.cpuMemory(h, needs(true, GIB, 1 << 20, 70_000));
    assertThat(heap.verdict()).isEqualTo(Verdict.UNSUPPORTED_HARDWARE);
    assertThat(heap.reason()).contains("-Xmx");
    List<FeatureCheck> noGpu = ModelFit.check(h, FakeFacts.noGpu(), ONE, needs(true, GIB, 16, 1));
    assertThat(noGpu)
        .extracting(FeatureCheck::feature)
        .containsExactly("model-architecture", "model-cpu-memory");
  }

  @Test
  void theEmbeddedModelsNeedsComeFromItsConfig() {
    Path dir = repo().resolve("models/sotu-moe");
    ModelNeeds m = ModelNeeds.of(dir, new DoctorTarget(1, 1, false, 512, 256, 8, 0));
    assertThat(m.modelType()).isEqualTo("deepseek_v3");
    assertThat(m.mla()).isTrue();
    assertThat(m.contextLength()).isEqualTo(256);
    assertThat(m.cpuWeightFileBytes()).isGreaterThan(1_000_000);
    assertThat(m.gpuWeightsBytes()).isGreaterThan(1_000_000);
    assertThat(m.gpuKvBytesPerToken()).isPositive();
    assertThat(m.cpuKvBytesPerToken()).isEqualTo(2 * m.gpuKvBytesPerToken());
    assertThat(m.a2aBytes()).isZero();
  }

  @Test
  void failuresAreTheRequiredFeaturesNotOkAndEveryModelCheckNotOk() {
    HostFacts h = FakeFacts.host();
    GpuFacts none = FakeFacts.noGpu();
    List<FeatureCheck> checks = Doctor.check(h, none, ONE, needs(true, 200 * GIB, 16, 1));
    DoctorReport r = new DoctorReport(h, none, null, checks, List.of());
    assertThat(r.failures(List.of()))
        .extracting(FeatureCheck::feature)
        .containsExactly("model-cpu-memory");
    assertThat(r.failures(List.of("cpu-engine", "cuda-graphs")))
        .extracting(FeatureCheck::feature)
        .containsExactly("cuda-graphs", "model-cpu-memory");
    assertThatThrownBy(() -> r.failures(List.of("warp-drive")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("no feature 'warp-drive'");
    assertThat(r.toJson(List.of())).contains("\"failed\"", "\"model-cpu-memory\"", "\"verdict\"");
    assertThat(r.text()).contains("Features", "cuda-device", "unsupported (hardware)");
  }

  static Path repo() {
    Path p = Path.of("").toAbsolutePath();
    while (p != null && !Files.isDirectory(p.resolve("models/sotu-moe"))) {
      p = p.getParent();
    }
    if (p == null) {
      throw new IllegalStateException("models/sotu-moe not found above the working directory");
    }
    return p;
  }
}
