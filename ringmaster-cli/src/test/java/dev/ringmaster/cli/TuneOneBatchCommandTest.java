package dev.ringmaster.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code ringmaster tune --mode one-batch} on the embedded model: each point a {@code bench
 * one-batch} child, one refused at start-up and recorded with its cause, the others measured by
 * decode tok/s over two repeats, and a winner whose serve command parses.
 */
class TuneOneBatchCommandTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @Test
  void tunesEngineOnlyTrialsAndRecordsTheOneThatFails(@TempDir Path out) throws Exception {
    CliTest.Run r =
        CliTest.run(
            "tune",
            "--mode",
            "one-batch",
            "--out",
            out.toString(),
            "--model",
            CliTest.repo().resolve("models/sotu-moe").toString(),
            "--space",
            "cpu-vector-bits=0,128,100", // 100 is no vector width: refused at start-up
            "--batch-size",
            "2",
            "--random-input-len",
            "8",
            "--random-output-len",
            "4",
            "--warmup-rounds",
            "1",
            "--warmup-decode-steps",
            "2",
            "--repeats",
            "2",
            "--startup-timeout",
            "60",
            "--run-timeout",
            "60");
    assertThat(r.status()).as(r.err()).isZero();
    List<JsonNode> ev = new ArrayList<>();
    for (String line : Files.readAllLines(out.resolve("evidence.jsonl"))) {
      ev.add(JSON.readTree(line));
    }
    assertThat(ev).hasSize(3);
    for (JsonNode t : ev) {
      if (t.get("id").asText().endsWith("=100")) {
        assertThat(t.get("status").asText()).isEqualTo("failed");
        assertThat(t.get("phase").asText()).isEqualTo("start-up");
        assertThat(t.get("cause").asText()).isEqualTo("refused flags");
        assertThat(t.get("exit_code").asInt()).isEqualTo(2);
        assertThat(t.get("last_error").asText()).contains("cpu-vector-bits");
      } else {
        assertThat(t.get("status").asText()).as(t.toString()).isEqualTo("ok");
        assertThat(t.get("samples")).hasSize(2);
        assertThat(t.get("objective").asDouble())
            .isEqualTo(t.get("metrics").get("decode_tokens_per_s").asDouble())
            .isPositive();
        assertThat(t.get("metrics").get("prefill_tokens_per_s").asDouble()).isPositive();
        assertThat(t.get("command").toString()).contains("\"one-batch\"", "\"--batch-size\",\"2\"");
      }
    }
    assertThat(r.out())
        .contains("3 trials: 2 measured, 1 failed, 0 pruned")
        .contains("decode tokens per second of the batch of `bench one-batch` (batch 2, input 8")
        .contains("| median decode tok/s |", "| prefill tok/s | decode tok/s |")
        .contains("## Failures", "refused flags");
    String launch =
        r.out().lines().filter(l -> l.startsWith("    ringmaster serve")).findFirst().orElseThrow();
    String[] words = launch.strip().split(" ");
    Main.commandLine().parseArgs(java.util.Arrays.copyOfRange(words, 1, words.length));
  }

  @Test
  void objectivesOfTheOtherModeAreRefused(@TempDir Path out) {
    String model = CliTest.repo().resolve("models/sotu-moe").toString();
    CliTest.Run serveObjective =
        CliTest.run(
            "tune",
            "--out",
            out.toString(),
            "--model",
            model,
            "--space",
            "cpu-threads=1",
            "--mode",
            "one-batch",
            "--objective",
            "throughput");
    assertThat(serveObjective.status()).isEqualTo(2);
    assertThat(serveObjective.err()).contains("--mode one-batch measures --objective decode");
    CliTest.Run batchObjective =
        CliTest.run(
            "tune",
            "--out",
            out.toString(),
            "--model",
            model,
            "--space",
            "cpu-threads=1",
            "--objective",
            "prefill");
    assertThat(batchObjective.status()).isEqualTo(2);
    assertThat(batchObjective.err()).contains("add --mode one-batch");
    CliTest.Run simulate =
        CliTest.run(
            "tune",
            "--out",
            out.toString(),
            "--model",
            model,
            "--space",
            "cpu-threads=1",
            "--simulate-first");
    assertThat(simulate.status()).isEqualTo(2);
    assertThat(simulate.err()).contains("--simulate-first needs a hardware profile");
  }
}
