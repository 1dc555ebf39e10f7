package dev.ringmaster.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ringmaster.sim.hw.Profiles;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code simulate calibrate} takes what {@code bench collectives --json} prints, unconverted. */
class SimulateCalibrateBenchJsonTest {

  @Test
  void cpuBenchCollectivesJsonCalibrates(@TempDir Path dir) throws Exception {
    Path json = cpuBenchCollectivesJson(dir);
    Path out = dir.resolve("cpu.json");
    CliTest.Run r =
        CliTest.run(
            "simulate",
            "calibrate",
            "--measurements",
            json.toString(),
            "--base-profile",
            "h200-x8",
            "--output",
            out.toString());
    // parsing and fitting is the claim; a 2-core box's CPU timings say nothing about the GPU
    assertThat(r.status()).as(r.err()).isZero();
    assertThat(r.out()).contains("peer oneshot:").contains("peer twoshot:");
    assertThat(Profiles.load(out.toString()).name()).isEqualTo("h200-x8-calibrated");
  }

  @Test
  void cpuCollectivesCalibrateTheHostProfileAndReportEveryPoint(@TempDir Path dir)
      throws Exception {
    Path json = cpuBenchCollectivesJson(dir);
    CliTest.Run r =
        CliTest.run(
            "simulate",
            "calibrate",
            "--measurements",
            json.toString(),
            "--base-profile",
            "cpu-host",
            "--output",
            dir.resolve("cpu.json").toString(),
            "--report",
            "--json");
    assertThat(r.status()).as(r.err()).isZero();
    JsonNode out = new ObjectMapper().readTree(r.out());
    // every measured algorithm is reported, fitted or (noisy latency-bound samples) kept
    String fitted = out.get("fitted").toString();
    for (String algo : new String[] {"ring", "oneshot", "twoshot", "recursive_doubling"}) {
      assertThat(fitted).contains("host " + algo + "/2: base");
    }
    assertThat(fitted).contains("GB/s");
    JsonNode rows = out.get("check").get("rows");
    // ring, one-shot, two-shot and recursive doubling at 9 sizes (256 B..64 KiB); AUTO is left out
    assertThat(rows).hasSize(36);
    for (JsonNode row : rows) {
      assertThat(row.get("kind").asText()).isEqualTo("allreduce");
      assertThat(row.get("world_size").asInt()).isEqualTo(2);
      assertThat(row.get("measured").asDouble()).isPositive();
      assertThat(row.get("predicted").asDouble()).isPositive();
      assertThat(row.has("error_pct")).isTrue();
    }
    assertThat(out.get("check").get("max_abs_error_pct").asDouble()).isNotNegative();
  }

  @Test
  void checkPrintsPredictedAgainstMeasuredDecode() {
    Path sample =
        CliTest.repo()
            .resolve(
                "ringmaster-tools/src/test/resources/calibrate/h200-v2lite-onebatch-38ce56d.json");
    CliTest.Run r =
        CliTest.run(
            "simulate",
            "check",
            "--measurements",
            sample.toString(),
            "--hardware",
            "h200",
            "--model-config",
            CliTest.repo().resolve("configs/deepseek-v2-lite.json").toString());
    assertThat(r.status()).as(r.err()).isZero();
    assertThat(r.out())
        .contains("batch 1, input 512, output 128")
        .contains("batch 32, input 512, output 128")
        .contains("244 tok/s")
        .contains("max abs error:");
  }

  @Test
  void checkAndCalibrateAppendTheirRowsToTheHistory(@TempDir Path dir) throws Exception {
    String sample =
        CliTest.repo()
            .resolve(
                "ringmaster-tools/src/test/resources/calibrate/h200-v2lite-onebatch-38ce56d.json")
            .toString();
    String config = CliTest.repo().resolve("configs/deepseek-v2-lite.json").toString();
    Path history = dir.resolve("history.jsonl");
    CliTest.Run check =
        CliTest.run(
            "simulate",
            "check",
            "--measurements",
            sample,
            "--hardware",
            "h200",
            "--model-config",
            config,
            "--history",
            history.toString());
    assertThat(check.status()).as(check.err()).isZero();
    CliTest.Run fit =
        CliTest.run(
            "simulate",
            "calibrate",
            "--measurements",
            sample,
            "--base-profile",
            "h200",
            "--output",
            dir.resolve("fit.json").toString(),
            "--model-config",
            config,
            "--history",
            history.toString());
    assertThat(fit.status()).as(fit.err()).isZero();
    List<String> lines = Files.readAllLines(history);
    assertThat(lines).hasSize(2);
    ObjectMapper m = new ObjectMapper();
    JsonNode first = m.readTree(lines.get(0));
    assertThat(first.get("benchmark").asText()).isEqualTo("simulate-check");
    assertThat(first.get("command").asText())
        .startsWith("ringmaster simulate check --measurements");
    assertThat(first.get("reference").asText()).contains(sample);
    assertThat(first.get("results").get("rows")).hasSize(4);
    JsonNode second = m.readTree(lines.get(1));
    assertThat(second.get("benchmark").asText()).isEqualTo("simulate-calibrate");
    assertThat(second.get("results").get("fitted").get(0).asText()).contains("token latency");
    // the calibrated profile's own rows: every batch size within 15%
    for (JsonNode row : second.get("results").get("check").get("rows")) {
      assertThat(Math.abs(row.get("error_pct").asDouble())).isLessThan(15);
    }
  }

  /** Runs a small {@code bench collectives --device cpu --json} and keeps its output in dir. */
  private static Path cpuBenchCollectivesJson(Path dir) throws Exception {
    CliTest.Run bench =
        CliTest.run(
            "bench",
            "collectives",
            "--device",
            "cpu",
            "--world-size",
            "2",
            "--max-bytes",
            "65536",
            "--iters",
            "3",
            "--json");
    assertThat(bench.status()).as(bench.err()).isZero();
    Path json = dir.resolve("coll.json");
    Files.writeString(json, bench.out());
    return json;
  }
}
