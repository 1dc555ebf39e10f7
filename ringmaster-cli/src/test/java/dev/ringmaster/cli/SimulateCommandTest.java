package dev.ringmaster.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ringmaster.sim.calibrate.MeasurementsIo;
import dev.ringmaster.sim.calibrate.SyntheticMeasurements;
import dev.ringmaster.sim.hw.Profiles;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SimulateCommandTest {
  private static String config(String name) {
    return CliTest.repo().resolve("configs").resolve(name + ".json").toString();
  }

  @Test
  void jsonCarriesTheDocumentedFields() throws Exception {
    CliTest.Run r =
        CliTest.run(
            "simulate",
            "--model-config",
            config("glm5"),
            "--hardware",
            "rtx-pro-6000-x8",
            "--tp-size",
            "8",
            "--quantization",
            "nvfp4",
            "--json");
    assertThat(r.status()).as(r.err()).isZero();
    JsonNode j = new ObjectMapper().readTree(r.out());
    for (String f :
        new String[] {
          "decode_tokens_per_s",
          "step_time_ms",
          "breakdown_ms",
          "collectives_per_step",
          "kv_capacity_tokens"
        }) {
      assertThat(j.has(f)).as(f).isTrue();
    }
    assertThat(j.get("breakdown_ms").has("collectives")).isTrue();
  }

  @Test
  void textNamesTheDominantTerm() {
    CliTest.Run r =
        CliTest.run(
            "simulate",
            "--model-config",
            config("deepseek-v2-lite"),
            "--hardware",
            "h200",
            "--batch-size",
            "32");
    assertThat(r.status()).as(r.err()).isZero();
    assertThat(r.out()).contains("dominant: moe").contains("KV capacity");
  }

  @Test
  void sweepPrintsATableAndWritesAPng(@TempDir Path dir) {
    Path png = dir.resolve("sweep.png");
    CliTest.Run r =
        CliTest.run(
            "simulate",
            "--model-config",
            config("deepseek-v2-lite"),
            "--hardware",
            "h200",
            "--sweep",
            "batch-size=1,8,32",
            "--plot",
            png.toString());
    assertThat(r.status()).as(r.err()).isZero();
    assertThat(r.out()).contains("batch-size").contains("32");
    assertThat(png).exists();
  }

  @Test
  void calibrateWritesAProfile(@TempDir Path dir) throws Exception {
    Path m = dir.resolve("m.json");
    Files.writeString(
        m, MeasurementsIo.toJson(SyntheticMeasurements.generate(Profiles.load("h200-x8"), 0, 1)));
    Path out = dir.resolve("mine.json");
    CliTest.Run r =
        CliTest.run(
            "simulate",
            "calibrate",
            "--measurements",
            m.toString(),
            "--base-profile",
            "h200-x8",
            "--output",
            out.toString());
    assertThat(r.status()).as(r.err()).isZero();
    assertThat(Profiles.load(out.toString()).name()).isEqualTo("h200-x8-calibrated");
  }

  @Test
  void unknownHardwareIsAOneLineError() {
    CliTest.Run r =
        CliTest.run("simulate", "--model-config", config("glm5"), "--hardware", "tpu-v9");
    assertThat(r.status()).isEqualTo(2);
    assertThat(r.err()).startsWith("error: hardware 'tpu-v9'");
  }

  @Test
  void speculativeOptionsWithoutAnAlgorithmAreRejected() {
    CliTest.Run r =
        CliTest.run(
            "simulate",
            "--model-config",
            config("glm5"),
            "--hardware",
            "rtx-pro-6000-x8",
            "--tp-size",
            "8",
            "--speculative-num-steps",
            "5");
    assertThat(r.status()).isEqualTo(2);
    assertThat(r.err()).contains("--speculative-algorithm");
  }

  @Test
  void malformedSweepNumberNamesTheParameter() {
    CliTest.Run r =
        CliTest.run(
            "simulate",
            "--model-config",
            config("glm5"),
            "--hardware",
            "rtx-pro-6000-x8",
            "--tp-size",
            "8",
            "--speculative-algorithm",
            "MTP",
            "--sweep",
            "speculative-accept-length=2,x");
    assertThat(r.status()).isEqualTo(2);
    assertThat(r.err()).contains("speculative-accept-length").contains("'x' is not a number");
  }

  @Test
  void nonPositiveChunkAndGraphSizesAreRejected() {
    for (String[] bad :
        new String[][] {
          {"--chunked-prefill-size", "0"},
          {"--chunked-prefill-size", "-4"},
          {"--cuda-graph-max-bs", "0"},
          {"--cuda-graph-max-bs", "-1"}
        }) {
      CliTest.Run r =
          CliTest.run(
              "simulate",
              "--model-config",
              config("glm5"),
              "--hardware",
              "rtx-pro-6000-x8",
              "--tp-size",
              "8",
              bad[0],
              bad[1]);
      assertThat(r.status()).as(String.join(" ", bad)).isEqualTo(2);
      assertThat(r.err()).contains(bad[0]);
    }
  }
}
