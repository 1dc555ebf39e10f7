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
 * {@code ringmaster tune} pruning end to end on the embedded model: doctor rules out a GPU point
 * this host cannot run, the simulator on the h200 profile rules out TP 2 (one GPU), and {@code
 * --simulate-first --simulate-top 2} runs the two points it predicts fastest, best first, with
 * their predictions beside the measurements.
 */
class TunePruneCommandTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  private static List<JsonNode> evidence(Path out) throws Exception {
    List<JsonNode> ev = new ArrayList<>();
    for (String line : Files.readAllLines(out.resolve("evidence.jsonl"))) {
      ev.add(JSON.readTree(line));
    }
    return ev;
  }

  @Test
  void doctorPrunesAPointThatNeedsMoreGpusThanTheHostHas(@TempDir Path out) throws Exception {
    String[] args = {
      "tune",
      "--out",
      out.toString(),
      "--model",
      CliTest.repo().resolve("models/sotu-moe").toString(),
      "--space",
      "--tp-size=64",
      "--startup-timeout",
      "10",
      "--",
      "--device",
      "cuda"
    };
    List<String> dryArgs = new ArrayList<>(List.of(args));
    dryArgs.add(1, "--dry-run");
    CliTest.Run dry = CliTest.run(dryArgs.toArray(String[]::new));
    assertThat(dry.status()).as(dry.err()).isZero();
    assertThat(dry.out()).contains("trial 1/1 --tp-size 64: pruned (doctor): ");
    CliTest.Run r = CliTest.run(args);
    assertThat(r.status()).as("no trial measured").isEqualTo(1);
    List<JsonNode> ev = evidence(out);
    assertThat(ev).hasSize(1);
    assertThat(ev.getFirst().get("status").asText()).isEqualTo("pruned");
    assertThat(ev.getFirst().get("cause").asText()).isEqualTo("doctor");
    // no GPU here (cuda-device) or fewer than 64 (allreduce-nccl): either way a verdict and why
    assertThat(ev.getFirst().get("last_error").asText()).contains("unsupported");
    assertThat(r.out()).contains("## Pruned before running", "| doctor |", "No trial was measured");
  }

  @Test
  void simulateFirstRunsTheBestPredictedPointsFirst(@TempDir Path out) throws Exception {
    CliTest.Run r =
        CliTest.run(
            "tune",
            "--out",
            out.toString(),
            "--model",
            CliTest.repo().resolve("models/sotu-moe").toString(),
            "--space",
            "--tp-size=1,2",
            "--space",
            "--max-running-requests=1,2,4",
            "--hardware",
            "h200",
            "--simulate-first",
            "--simulate-top",
            "2",
            "--num-prompts",
            "4",
            "--random-input-len",
            "8",
            "--random-output-len",
            "4",
            "--repeats",
            "1",
            "--startup-timeout",
            "60",
            "--run-timeout",
            "60");
    assertThat(r.status()).as(r.err()).isZero();
    List<JsonNode> ev = evidence(out);
    assertThat(ev).hasSize(6);
    // recorded in the order decided: the pruned points first, then the runs, best predicted first
    List<String> order = ev.stream().map(t -> t.get("id").asText()).toList();
    assertThat(order.subList(4, 6))
        .containsExactly(
            "--tp-size 1 --max-running-requests 4", "--tp-size 1 --max-running-requests 2");
    for (JsonNode t : ev) {
      String id = t.get("id").asText();
      if (id.startsWith("--tp-size 2")) {
        assertThat(t.get("status").asText()).isEqualTo("pruned");
        assertThat(t.get("cause").asText()).isEqualTo("does not run");
        assertThat(t.get("last_error").asText()).contains("simulator on h200", "--tp-size 2");
      } else if (id.endsWith("--max-running-requests 1")) {
        assertThat(t.get("status").asText()).isEqualTo("pruned");
        assertThat(t.get("cause").asText()).isEqualTo("simulate-first");
        assertThat(t.get("predicted_rank").asInt()).isEqualTo(3);
        assertThat(t.get("last_error").asText()).contains("rank 3 of 3", "--simulate-top 2");
      } else {
        assertThat(t.get("status").asText()).as(t.toString()).isEqualTo("ok");
        assertThat(t.get("predicted").asDouble()).isPositive();
        assertThat(t.get("predicted_rank").asInt()).isEqualTo(id.endsWith("4") ? 1 : 2);
        assertThat(t.get("objective").asDouble()).isPositive();
      }
    }
    assertThat(r.out())
        .contains("6 trials: 2 measured, 0 failed, 4 pruned")
        .contains("| predicted | predicted rank |")
        .contains("Predicted by the simulator on the h200 profile.")
        .contains("Rank correlation (Spearman) of predicted and measured: ")
        .contains("| `--tp-size 1 --max-running-requests 1` | simulate-first |");
  }
}
