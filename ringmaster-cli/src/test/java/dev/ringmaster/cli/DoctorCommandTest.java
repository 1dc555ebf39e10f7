package dev.ringmaster.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ringmaster.cuda.CudaRuntime;
import dev.ringmaster.sim.hw.HardwareProfile;
import dev.ringmaster.sim.hw.Profiles;
import java.nio.file.Path;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code ringmaster doctor} end to end on this machine: JSON, exit status, --model, --measure. */
class DoctorCommandTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  private static JsonNode check(JsonNode report, String feature) {
    for (JsonNode c : report.get("checks")) {
      if (c.get("feature").asText().equals(feature)) {
        return c;
      }
    }
    throw new AssertionError("no check " + feature + " in " + report);
  }

  @Test
  void jsonReportsTheHostAndAVerdictWithAReasonForEveryFeature() throws Exception {
    CliTest.Run r = CliTest.run("doctor", "--json");
    assertThat(r.status()).as(r.err()).isZero();
    JsonNode j = JSON.readTree(r.out());
    assertThat(j.get("host").get("cores").asInt()).isPositive();
    assertThat(j.get("host").get("java_version").asText()).startsWith("25");
    assertThat(j.get("checks").size()).isGreaterThanOrEqualTo(17);
    for (JsonNode c : j.get("checks")) {
      assertThat(c.get("verdict").asText())
          .isIn("OK", "UNSUPPORTED_HARDWARE", "UNSUPPORTED_SOFTWARE", "UNTESTED");
      assertThat(c.get("reason").asText()).isNotBlank();
    }
    assertThat(check(j, "cpu-engine").get("verdict").asText()).isEqualTo("OK");
    boolean gpu = !CudaRuntime.probe().devices().isEmpty();
    assertThat(check(j, "cuda-device").get("verdict").asText().equals("OK")).isEqualTo(gpu);
    assertThat(j.get("failed").size()).isZero();
  }

  @Test
  void exitStatusFollowsRequiredFeaturesAndBadFlagsAreRefused() {
    assertThat(CliTest.run("doctor", "--require", "cpu-engine,cpu-collectives").status()).isZero();
    // no FP8 tensor-core (e4m3 MMA) path in this build, on any host
    CliTest.Run r = CliTest.run("doctor", "--require", "sparse-attention,fp8-tensor-cores");
    assertThat(r.status()).isEqualTo(1);
    assertThat(r.out()).contains("not ok: fp8-tensor-cores").doesNotContain("not ok: sparse");
    CliTest.Run bad = CliTest.run("doctor", "--require", "warp-drive");
    assertThat(bad.status()).isEqualTo(2);
    assertThat(bad.err()).contains("no feature 'warp-drive'");
    assertThat(CliTest.run("doctor", "--moe-a2a-backend", "deepep").status()).isEqualTo(2);
    assertThat(CliTest.run("doctor", "--model", "/nonexistent").err()).contains("no config.json");
  }

  @Test
  void modelNeedsAreCheckedAgainstMemory() throws Exception {
    Path m = CliTest.repo().resolve("models/sotu-moe");
    CliTest.Run r =
        CliTest.run("doctor", "--json", "--model", m.toString(), "--context-length", "2048");
    assertThat(r.status()).as(r.err()).isZero();
    JsonNode j = JSON.readTree(r.out());
    assertThat(j.get("model").get("model_type").asText()).isEqualTo("deepseek_v3");
    assertThat(j.get("model").get("context_length").asInt()).isEqualTo(2048);
    assertThat(check(j, "model-cpu-memory").get("verdict").asText()).isEqualTo("OK");
    // a context whose f32 KV cannot fit in half of any test JVM's heap: exit 1, named
    CliTest.Run big =
        CliTest.run("doctor", "--model", m.toString(), "--context-length", "2000000000");
    assertThat(big.status()).isEqualTo(1);
    assertThat(big.out()).contains("model-cpu-memory", "-Xmx");
  }

  @Test
  void measureSavesAHostProfileTheSimulatorLoads(@TempDir Path dir) throws Exception {
    Assumptions.assumeTrue(
        CudaRuntime.probe().devices().isEmpty(), "on a GPU host --measure times the GPUs instead");
    Path profile = dir.resolve("host.json");
    CliTest.Run r =
        CliTest.run("doctor", "--json", "--measure", "--profile-out", profile.toString());
    assertThat(r.status()).as(r.err()).isZero();
    JsonNode j = JSON.readTree(r.out());
    assertThat(j.get("measured").toString()).contains("host copy bandwidth", "host profile");
    HardwareProfile p = Profiles.load(profile.toString());
    assertThat(p.name()).isEqualTo("cpu-host-this-host");
    assertThat(p.collectives().host().allreduce()).containsKey("ring/2");
  }
}
