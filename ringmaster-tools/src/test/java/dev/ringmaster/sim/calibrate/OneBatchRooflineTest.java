package dev.ringmaster.sim.calibrate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.ringmaster.sim.Configs;
import dev.ringmaster.sim.hw.Profiles;
import dev.ringmaster.sim.model.ModelShape;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Objects;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The rooflines {@code bench one-batch} prints, on the session-7 H200 run of the V2-Lite shape
 * (9b7a8af): from first principles, a batch-1 decode step reads the ~2.4B active parameters (bf16,
 * 2 bytes each, ~4.9 GB with the LM head) and a few MB of cache; batch 128 touches nearly all 64
 * experts (~30 GB); prompts cost 2 FLOPs per active parameter per token, unless reading the weights
 * once takes longer.
 */
class OneBatchRooflineTest {
  private static final ModelShape V2_LITE = Configs.load("deepseek-v2-lite");

  private static MeasurementFile.OneBatch v7() throws Exception {
    try (var in =
        OneBatchRooflineTest.class.getResourceAsStream(
            "/calibrate/h200-v2lite-onebatch-9b7a8af.json")) {
      String json = new String(Objects.requireNonNull(in).readAllBytes(), StandardCharsets.UTF_8);
      return (MeasurementFile.OneBatch) MeasurementsIo.parseAny(json);
    }
  }

  @Test
  void decodeRooflinesFollowTheBytesTheStepsRead() throws Exception {
    List<OneBatchRoofline.Row> rows =
        OneBatchRoofline.of(v7(), V2_LITE, Profiles.load("h200").gpu());
    assertThat(rows).extracting(OneBatchRoofline.Row::batchSize).containsExactly(1, 8, 32, 128);
    OneBatchRoofline.Row b1 = rows.get(0);
    assertThat(b1.decodeGb()).isBetween(4.6, 5.3);
    // 4.8 TB/s over ~4.9 GB: ~980 tok/s; the run's ~3.25 ms steps are about a third of it
    assertThat(b1.decodeTokensPerS()).isBetween(900.0, 1050.0);
    assertThat(b1.decodeShare()).isBetween(0.25, 0.45);
    OneBatchRoofline.Row b128 = rows.get(3);
    assertThat(b128.decodeGb()).isBetween(25.0, 35.0);
    for (OneBatchRoofline.Row r : rows) {
      assertThat(r.decodeShare()).as("batch %d", r.batchSize()).isBetween(0.05, 1.0);
      assertThat(r.prefillShare()).as("batch %d", r.batchSize()).isBetween(0.01, 1.0);
    }
  }

  @Test
  void prefillRooflineIsTheWeightBytesOrTheTensorRate() throws Exception {
    List<OneBatchRoofline.Row> rows =
        OneBatchRoofline.of(v7(), V2_LITE, Profiles.load("h200").gpu());
    // One 512-token prompt touches nearly every expert: ~31 GB of weights at 4.8 TB/s, ~79k tok/s.
    assertThat(rows.get(0).prefillTokensPerS()).isBetween(70e3, 90e3);
    // Eight prompts: 4,096 tokens x 2 x ~2.4B FLOPs at 989.5 TFLOPS, ~200k tok/s (plus attention).
    assertThat(rows.get(1).prefillTokensPerS()).isCloseTo(2.1e5, within(3e4));
  }

  /** {@code run} as if it had loaded the V2-Lite config with {@code quantization} added. */
  private static MeasurementFile.OneBatch quantized(
      MeasurementFile.OneBatch run, Path dir, String quantization) throws Exception {
    var json = new com.fasterxml.jackson.databind.ObjectMapper();
    var config =
        (com.fasterxml.jackson.databind.node.ObjectNode)
            json.readTree(Files.readString(Configs.path("deepseek-v2-lite")));
    if (quantization != null) {
      config.set("quantization_config", json.readTree(quantization));
    }
    Files.writeString(dir.resolve("config.json"), config.toString());
    return new MeasurementFile.OneBatch(
        dir.toString(),
        run.device(),
        run.tpSize(),
        run.epSize(),
        run.memoryPlan(),
        run.results(),
        run.allreduce(),
        run.moeA2aBackend());
  }

  @Test
  void quantizedCheckpointsReadTheirOwnBytes(@TempDir Path dir) throws Exception {
    var h200 = Profiles.load("h200").gpu();
    double bf16 =
        OneBatchRoofline.of(quantized(v7(), dir, null), V2_LITE, h200).getFirst().decodeGb();
    MeasurementFile.OneBatch fp8 =
        quantized(
            v7(),
            dir,
            "{\"quant_method\": \"fp8\", \"fmt\": \"e4m3\", \"activation_scheme\":"
                + " \"dynamic\", \"weight_block_size\": [128, 128]}");
    assertThat(OneBatchSteps.quantOf(fp8).name()).isEqualTo("fp8");
    // every decoder linear at 1 byte (plus a scale per 128x128 block), the LM head (0.53 GB)
    // and the cache as they were: a little over half the bf16 step
    double fp8Gb = OneBatchRoofline.of(fp8, V2_LITE, h200).getFirst().decodeGb();
    assertThat(fp8Gb / bf16).isBetween(0.5, 0.62);
    MeasurementFile.OneBatch nvfp4 =
        quantized(
            v7(),
            dir,
            "{\"quant_method\": \"modelopt\", \"quant_algo\": \"NVFP4\", \"group_size\": 16,"
                + " \"ignore\": [\"lm_head\", \"*self_attn*\"]}");
    assertThat(OneBatchSteps.quantOf(nvfp4).name()).isEqualTo("nvfp4-experts+bf16-dense");
    double fp4Gb = OneBatchRoofline.of(nvfp4, V2_LITE, h200).getFirst().decodeGb();
    assertThat(fp4Gb).isLessThan(bf16).isGreaterThan(fp8Gb * 0.5);
  }

  @Test
  void profilesAreFoundByTheGpuTheDeviceNames() {
    assertThat(OneBatchRoofline.profileFor("NVIDIA H200, sm_90, 132 SMs, 139.8 GiB"))
        .map(p -> p.name())
        .contains("h200");
    assertThat(OneBatchRoofline.profileFor("NVIDIA H100 80GB HBM3, sm_90, 132 SMs, 79.1 GiB"))
        .map(p -> p.gpu().name())
        .contains("NVIDIA H100 80GB HBM3");
    assertThat(OneBatchRoofline.profileFor("NVIDIA A10, sm_86, 72 SMs, 22 GiB")).isEmpty();
    assertThat(OneBatchRoofline.profileFor(null)).isEmpty();
  }
}
