package dev.ringmaster.sim.calibrate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringmaster.sim.calibrate.Measurements.StepSample;
import dev.ringmaster.sim.hw.Profiles;
import dev.ringmaster.sim.model.ModelShapes;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Objects;
import org.junit.jupiter.api.Test;

/** The formats as the benchmarks really print them. */
class BenchFormatParsingTest {

  /**
   * The one-batch entries of benchmarks/history-archive.jsonl.gz (H200, DeepSeek-V2-Lite shape,
   * bf16).
   */
  private static List<String> h200OneBatch() throws Exception {
    try (var in =
        BenchFormatParsingTest.class.getResourceAsStream("/calibrate/h200-one-batch.jsonl")) {
      return new String(Objects.requireNonNull(in).readAllBytes(), StandardCharsets.UTF_8)
          .lines()
          .filter(l -> !l.isBlank())
          .toList();
    }
  }

  @Test
  void h200OneBatchHistoryParsesIntoStepSamples() throws Exception {
    List<String> lines = h200OneBatch();
    assertThat(lines).hasSize(4);
    var shape = ModelShapes.load(Path.of("../configs/deepseek-v2-lite.json"));
    var hw = Profiles.load("h200");
    for (String line : lines) {
      MeasurementFile f = MeasurementsIo.parseAny(line);
      assertThat(f).isInstanceOf(MeasurementFile.OneBatch.class);
      MeasurementFile.OneBatch run = (MeasurementFile.OneBatch) f;
      assertThat(run.device()).isEqualTo("cuda");
      assertThat(run.results()).isNotEmpty();
      // the recorded model is a description, not a path: --model-config is needed
      assertThatThrownBy(() -> OneBatchSteps.model(run, null))
          .hasMessageContaining("--model-config");
      List<StepSample> steps = OneBatchSteps.samples(run, shape, hw);
      assertThat(steps).hasSameSizeAs(run.results());
      for (StepSample s : steps) {
        assertThat(s.cudaGraph()).isTrue();
        assertThat(s.kernels()).isPositive();
        assertThat(s.stepTimeUs()).isGreaterThan(s.gpuBusyUs() * 0.1).isPositive();
      }
    }
  }

  @Test
  void h200OneBatchCalibratesTheStepOverhead() throws Exception {
    var shape = ModelShapes.load(Path.of("../configs/deepseek-v2-lite.json"));
    List<MeasurementFile> files = h200OneBatch().stream().map(MeasurementsIo::parseAny).toList();
    Calibrator.Result r =
        BenchCalibration.calibrate(Profiles.load("h200"), files, run -> shape, "h200-measured");
    assertThat(r.fitted()).anyMatch(l -> l.startsWith("graphed steps: step overhead"));
  }

  @Test
  void collectivesJsonMapsAlgorithms() {
    String json =
        """
        [ {"op":"ALL_REDUCE","algorithm":"NCCL","worldSize":8,"bytes":1024,"timeMicros":20.0,
           "algBandwidthGBps":0.05,"busBandwidthGBps":0.09,"correct":true},
          {"op":"ALL_REDUCE","algorithm":"FUSED","worldSize":8,"bytes":1024,"timeMicros":9.0,
           "algBandwidthGBps":0.1,"busBandwidthGBps":0.2,"correct":true},
          {"op":"ALL_REDUCE","algorithm":"AUTO","worldSize":8,"bytes":1024,"timeMicros":9.0,
           "algBandwidthGBps":0.1,"busBandwidthGBps":0.2,"correct":true},
          {"op":"ALL_REDUCE","algorithm":"TWOSHOT","worldSize":8,"bytes":1024,"timeMicros":9.0,
           "algBandwidthGBps":0.1,"busBandwidthGBps":0.2,"correct":false},
          {"op":"ALL_TO_ALL","algorithm":null,"worldSize":8,"bytes":1024,"timeMicros":30.0,
           "algBandwidthGBps":0.03,"busBandwidthGBps":0.03,"correct":true} ]
        """;
    var f = (MeasurementFile.Collectives) MeasurementsIo.parseAny(json);
    assertThat(BenchCollectives.samples(f.results()))
        .containsExactly(
            new Measurements.CollectiveSample("allreduce", "nccl", "auto", 8, 1024, 20.0),
            new Measurements.CollectiveSample("allreduce", "fused", null, 8, 1024, 9.0),
            new Measurements.CollectiveSample("alltoall", "nccl", null, 8, 1024, 30.0));
  }

  @Test
  void nativeSchemaIsStillRecognised() {
    Measurements m = SyntheticMeasurements.generate(Profiles.load("h200-x8"), 0, 3);
    MeasurementFile f = MeasurementsIo.parseAny(MeasurementsIo.toJson(m));
    assertThat(f).isEqualTo(new MeasurementFile.Native(m));
  }

  @Test
  void cpuOneBatchIsRefusedForAGpuProfile() {
    var f =
        (MeasurementFile.OneBatch)
            MeasurementsIo.parseAny(
                "{\"model\":\"m\",\"device\":\"cpu\",\"tp_size\":1,\"ep_size\":1,\"results\":[]}");
    assertThatThrownBy(
            () ->
                OneBatchSteps.samples(
                    f,
                    ModelShapes.load(Path.of("../configs/deepseek-v2-lite.json")),
                    Profiles.load("h200")))
        .hasMessageContaining("--device cuda");
  }
}
