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
 * {@code ringmaster tune} end to end on the embedded model: 8 trials as child servers, two kinds of
 * failure recorded with their causes, a winner whose command parses, then a resume that runs
 * nothing.
 */
class TuneCommandTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  private static List<String> args(Path out, String... extra) {
    List<String> a =
        new ArrayList<>(
            List.of(
                "tune",
                "--out",
                out.toString(),
                "--model",
                CliTest.repo().resolve("models/sotu-moe").toString(),
                "--space",
                "cpu-threads=1,2",
                "--space",
                "--max-running-requests=0,4", // 0 is refused at start-up
                "--space",
                "--max-total-tokens=24,4096", // 24 cannot hold a request: fails mid-run
                "--num-prompts",
                "2",
                "--random-input-len",
                "16",
                "--random-output-len",
                "8",
                "--startup-timeout",
                "60",
                "--run-timeout",
                "60"));
    a.addAll(List.of(extra));
    a.addAll(List.of("--", "--chunked-prefill-size", "16"));
    return a;
  }

  @Test
  void runsTheGridRecordsFailuresWithCausesAndResumes(@TempDir Path out) throws Exception {
    CliTest.Run dry = CliTest.run(args(out, "--dry-run").toArray(String[]::new));
    assertThat(dry.status()).as(dry.err()).isZero();
    assertThat(dry.out().lines()).hasSize(8).allMatch(l -> l.contains("to run: ringmaster serve"));

    CliTest.Run r = CliTest.run(args(out).toArray(String[]::new));
    assertThat(r.status()).as(r.err()).isZero();
    List<JsonNode> ev = new ArrayList<>();
    for (String line : Files.readAllLines(out.resolve("evidence.jsonl"))) {
      ev.add(JSON.readTree(line));
    }
    assertThat(ev).hasSize(8);
    for (JsonNode t : ev) {
      String id = t.get("id").asText();
      if (id.contains("--max-running-requests 0")) {
        assertThat(t.get("status").asText()).isEqualTo("failed");
        assertThat(t.get("phase").asText()).isEqualTo("start-up");
        assertThat(t.get("cause").asText()).isEqualTo("refused flags");
        assertThat(t.get("exit_code").asInt()).isEqualTo(2);
        assertThat(t.get("last_error").asText()).contains("--max-running-requests");
      } else if (id.contains("--max-total-tokens 24")) {
        assertThat(t.get("status").asText()).isEqualTo("failed");
        assertThat(t.get("phase").asText()).isEqualTo("run");
        assertThat(t.get("cause").asText()).isEqualTo("requests failed");
        assertThat(t.get("last_error").asText()).contains("maximum sequence length");
      } else {
        assertThat(t.get("status").asText()).as(t.toString()).isEqualTo("ok");
        assertThat(t.get("objective").asDouble()).isPositive();
        assertThat(t.get("metrics").get("median_ttft_ms").asDouble()).isPositive();
      }
      assertThat(Files.exists(Path.of(t.get("log").asText()))).isTrue();
    }
    String report = Files.readString(out.resolve("report.md"));
    assertThat(report).contains("## Failures", "refused flags", "requests failed");
    assertThat(r.out()).isEqualTo(report);
    String launch =
        report.lines().filter(l -> l.startsWith("    ringmaster serve")).findFirst().orElseThrow();
    assertThat(launch).contains("--max-running-requests 4", "--max-total-tokens 4096");
    // the winner's command is one the CLI accepts
    String[] words = launch.strip().split(" ");
    Main.commandLine().parseArgs(java.util.Arrays.copyOfRange(words, 1, words.length));

    assertThat(CliTest.run(args(out).toArray(String[]::new)).status()).isEqualTo(2);
    var logTime = Files.getLastModifiedTime(out.resolve("logs/trial-4.log"));
    CliTest.Run again = CliTest.run(args(out, "--resume").toArray(String[]::new));
    assertThat(again.status()).isZero();
    // every trial was recorded: none ran again
    assertThat(Files.getLastModifiedTime(out.resolve("logs/trial-4.log"))).isEqualTo(logTime);
    assertThat(Files.readAllLines(out.resolve("evidence.jsonl"))).hasSize(8);
    assertThat(again.out()).contains(launch);
  }
}
