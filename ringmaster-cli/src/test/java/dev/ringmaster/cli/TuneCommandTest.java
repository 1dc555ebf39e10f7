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
  void goodputCountsOnlyRequestsMeetingTheSlo(@TempDir Path out) throws Exception {
    // no request can produce a token in a microsecond: every repeat's goodput is 0
    CliTest.Run r =
        CliTest.run(
            "tune",
            "--out",
            out.toString(),
            "--model",
            CliTest.repo().resolve("models/sotu-moe").toString(),
            "--space",
            "--max-running-requests=4",
            "--num-prompts",
            "2",
            "--random-input-len",
            "8",
            "--random-output-len",
            "4",
            "--repeats",
            "2",
            "--slo-ttft-ms",
            "100000",
            "--slo-tpot-ms",
            "0.001",
            "--startup-timeout",
            "60",
            "--run-timeout",
            "60");
    assertThat(r.status()).as(r.err()).isZero();
    JsonNode t = JSON.readTree(Files.readAllLines(out.resolve("evidence.jsonl")).getFirst());
    assertThat(t.get("status").asText()).isEqualTo("ok");
    assertThat(t.get("samples")).hasSize(2);
    assertThat(t.get("objective").asDouble()).isZero();
    assertThat(t.get("metrics").get("slo_attainment").asDouble()).isZero();
    assertThat(t.get("metrics").get("output_throughput").asDouble()).isPositive();
    assertThat(r.out()).contains("goodput: output tokens per second of the requests meeting");
    assertThat(r.out()).contains("TTFT <= 100000 ms and TPOT <= 0.001 ms");
    assertThat(r.out()).contains("| median goodput tok/s |", "| output tok/s |", "| SLO met |");
    assertThat(r.out()).contains("| 0% |");
  }

  /** A one-point tune with {@code flag value} exits 2 with an error containing {@code says}. */
  private static void refused(Path out, String flag, String value, String says) {
    CliTest.Run r =
        CliTest.run("tune", "--out", out.toString(), "--space", "cpu-threads=1", flag, value);
    assertThat(r.status()).as(flag).isEqualTo(2);
    assertThat(r.err()).contains(says);
  }

  @Test
  void badObjectiveFlagsAreRefused(@TempDir Path out) {
    refused(out, "--objective", "goodput", "--objective goodput needs an SLO");
    refused(out, "--repeats", "0", "--repeats");
    refused(out, "--warmup-requests", "-1", "--warmup-requests");
    refused(out, "--warmup-runs", "-1", "--warmup-runs");
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
        // the default three repeats against one server: the objective is their median
        assertThat(t.get("samples")).hasSize(3);
        List<Double> samples = new ArrayList<>();
        t.get("samples").forEach(x -> samples.add(x.asDouble()));
        assertThat(t.get("objective").asDouble())
            .isEqualTo(samples.stream().sorted().toList().get(1));
        // the default warm-up run went first, against the same server, and is not a sample
        String client =
            Files.readString(Path.of(t.get("log").asText().replace(".log", "-client.log")));
        assertThat(client.indexOf("# warm-up run 1 of 1 (not measured)"))
            .isNotNegative()
            .isLessThan(client.indexOf("# repeat 1 of 3"));
        assertThat(t.get("spread").asDouble())
            .isEqualTo(
                samples.stream().mapToDouble(x -> x).max().orElseThrow()
                    - samples.stream().mapToDouble(x -> x).min().orElseThrow());
      }
      assertThat(Files.exists(Path.of(t.get("log").asText()))).isTrue();
    }
    String report = Files.readString(out.resolve("report.md"));
    assertThat(report)
        .contains("## Failures", "refused flags", "requests failed", "median of 3 repeats")
        .containsAnyOf("Winner `", "No winner: ");
    byte[] png = Files.readAllBytes(out.resolve("trials.png"));
    assertThat(java.util.Arrays.copyOf(png, 4)).isEqualTo(new byte[] {(byte) 0x89, 'P', 'N', 'G'});
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
