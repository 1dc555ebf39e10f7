package dev.ringmaster.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ringmaster.parallel.bench.BenchmarkResult;
import dev.ringmaster.parallel.bench.CollectiveBenchmark;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What benchmarks leave behind: collective results re-read from their JSON (to plot them where they
 * were not measured) and history records whose command line names the configuration measured.
 */
class BenchRecordsCliTest {
  @Test
  void collectivesFromJsonReprintsAndPlotsTheSameResults(@TempDir Path tmp) throws Exception {
    CliTest.Run measured =
        CliTest.run(
            "bench",
            "collectives",
            "--world-size",
            "2",
            "--min-bytes",
            "1024",
            "--max-bytes",
            "4096",
            "--iters",
            "3",
            "--trials",
            "1",
            "--json");
    assertThat(measured.status()).as(measured.err()).isZero();
    Path json = tmp.resolve("ar.json");
    Files.writeString(json, measured.out());
    List<BenchmarkResult> want = CollectiveBenchmark.fromJson(measured.out());

    Path png = tmp.resolve("ar.png");
    CliTest.Run again =
        CliTest.run(
            "bench",
            "collectives",
            "--from-json",
            json.toString(),
            "--plot",
            png.toString(),
            "--json");
    assertThat(again.status()).as(again.err()).isZero();
    assertThat(CollectiveBenchmark.fromJson(again.out())).isEqualTo(want);
    byte[] head = Files.readAllBytes(png);
    assertThat(head.length).isGreaterThan(1000);
    assertThat(new String(head, 1, 3, java.nio.charset.StandardCharsets.US_ASCII)).isEqualTo("PNG");

    CliTest.Run recorded =
        CliTest.run(
            "bench",
            "collectives",
            "--from-json",
            json.toString(),
            "--history",
            tmp.resolve("h.jsonl").toString());
    assertThat(recorded.status()).isEqualTo(2);
    assertThat(recorded.err()).contains("--from-json measures nothing");
    assertThat(tmp.resolve("h.jsonl")).doesNotExist();
  }

  @Test
  void oneBatchHistoryNamesDeviceParallelismAndAllreduce(@TempDir Path tmp) throws Exception {
    Path history = tmp.resolve("history.jsonl");
    CliTest.Run r =
        CliTest.run(
            "bench",
            "one-batch",
            "--model",
            CliTest.repo().resolve("fixtures/golden/deepseek_v3_bf16").toString(),
            "--batch-size",
            "1,2",
            "--input-len",
            "4",
            "--output-len",
            "2",
            "--warmup-decode-steps",
            "3",
            "--tp-size",
            "2",
            "--allreduce",
            "ring",
            "--history",
            history.toString());
    assertThat(r.status()).as(r.err()).isZero();
    JsonNode rec = new ObjectMapper().readTree(Files.readAllLines(history).getFirst());
    assertThat(rec.get("command").asText())
        .isEqualTo(
            "ringmaster bench one-batch --device cpu --tp-size 2 --allreduce ring"
                + " --batch-size 1,2 --input-len 4 --output-len 2"
                + " --warmup-rounds auto --warmup-decode-steps 3");
    assertThat(rec.at("/results/warmup/rounds").asInt()).isEqualTo(4);
    assertThat(rec.at("/results/warmup/until_jit_settles").asBoolean()).isTrue();
    assertThat(rec.at("/results/warmup/decode_steps").asInt()).isEqualTo(3);
    assertThat(rec.at("/results/results/0/warmup_rounds").asInt()).isBetween(4, 200);
    assertThat(r.out())
        .contains(
            "warm-up per batch size (untimed): rounds of a prefill and 3 decode steps of the same"
                + " prompts, at least 4, then until the JIT settles");
  }
}
