package dev.ringmaster.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code simulate}'s serving mode and the speculative verify flags, through the CLI. */
class SimulateServeCliTest {
  private static final String[] GLM5_TP8 = {
    "simulate",
    "--model-config",
    CliTest.repo().resolve("configs/glm5.json").toString(),
    "--hardware",
    "rtx-pro-6000-x8",
    "--tp-size",
    "8",
    "--quantization",
    "nvfp4"
  };

  private static String[] with(String... more) {
    String[] out = new String[GLM5_TP8.length + more.length];
    System.arraycopy(GLM5_TP8, 0, out, 0, GLM5_TP8.length);
    System.arraycopy(more, 0, out, GLM5_TP8.length, more.length);
    return out;
  }

  @Test
  void servingModeReportsQueueingWhenGraphsCapTheRunningRequests() throws Exception {
    CliTest.Run r =
        CliTest.run(
            with(
                "--num-prompts",
                "256",
                "--random-input-len",
                "1024",
                "--random-output-len",
                "128",
                "--max-concurrency",
                "256",
                "--cuda-graph-max-bs",
                "64",
                "--json"));
    assertThat(r.status()).as(r.err()).isZero();
    JsonNode j = new ObjectMapper().readTree(r.out());
    assertThat(j.get("max_running_requests").asInt()).isEqualTo(64);
    assertThat(j.get("peak_running").asInt()).isEqualTo(64);
    assertThat(j.get("output_throughput").asDouble()).isPositive();
    assertThat(j.get("notes").toString()).contains("queued");
    CliTest.Run text =
        CliTest.run(
            with("--num-prompts", "16", "--random-input-len", "512", "--random-output-len", "32"));
    assertThat(text.status()).as(text.err()).isZero();
    assertThat(text.out()).contains("output throughput").contains("TTFT median");
  }

  @Test
  void disableOverlapScheduleAdmitsArrivalsAtTheNextStep() throws Exception {
    String[] w = {
      "--num-prompts",
      "64",
      "--random-input-len",
      "512",
      "--random-output-len",
      "64",
      "--max-concurrency",
      "32",
      "--json"
    };
    CliTest.Run on = CliTest.run(with(w));
    String[] off = java.util.Arrays.copyOf(w, w.length + 1);
    off[w.length] = "--disable-overlap-schedule";
    CliTest.Run plain = CliTest.run(with(off));
    assertThat(on.status()).as(on.err()).isZero();
    assertThat(plain.status()).as(plain.err()).isZero();
    ObjectMapper m = new ObjectMapper();
    double ttftOn = m.readTree(on.out()).get("mean_ttft_ms").asDouble();
    double ttftOff = m.readTree(plain.out()).get("mean_ttft_ms").asDouble();
    // with the overlap schedule a request arriving during a step waits for the step after next
    assertThat(ttftOn).isGreaterThan(ttftOff);
  }

  @Test
  void servingModeThatCannotFitExitsWithTheReason() {
    CliTest.Run r = CliTest.run(with("--num-prompts", "4", "--mem-fraction-static", "0.5"));
    assertThat(r.status()).isEqualTo(SimulateCommand.DOES_NOT_RUN);
    assertThat(r.out()).contains("does not run").contains("--mem-fraction-static");
    CliTest.Run bad = CliTest.run(with("--num-prompts", "4", "--request-rate", "fast"));
    assertThat(bad.status()).isEqualTo(2);
    assertThat(bad.err()).contains("--request-rate");
  }

  @Test
  void speculativeVerifyModeAndAcceptanceSources(@TempDir Path tmp) throws Exception {
    CliTest.Run eager = CliTest.run(with("--speculative-algorithm", "EAGLE3", "--json"));
    CliTest.Run graph =
        CliTest.run(
            with("--speculative-algorithm", "EAGLE3", "--speculative-verify", "graph", "--json"));
    ObjectMapper m = new ObjectMapper();
    double eagerSpeedup = m.readTree(eager.out()).get("speculative").get("speedup").asDouble();
    double graphSpeedup = m.readTree(graph.out()).get("speculative").get("speedup").asDouble();
    assertThat(eagerSpeedup).isLessThan(1.0);
    assertThat(graphSpeedup).isGreaterThan(1.0);
    Path bench = tmp.resolve("serve.jsonl");
    Files.writeString(bench, "{\"accept_length\": null}\n{\"accept_length\": 1.75}\n");
    CliTest.Run from =
        CliTest.run(
            with(
                "--speculative-algorithm",
                "MTP",
                "--speculative-accept-from",
                bench.toString(),
                "--json"));
    assertThat(from.status()).as(from.err()).isZero();
    assertThat(m.readTree(from.out()).get("speculative").get("accept_length").asDouble())
        .isEqualTo(1.75);
    CliTest.Run perPosition =
        CliTest.run(
            with(
                "--speculative-algorithm",
                "MTP",
                "--speculative-accept-per-position",
                "0.8,0.5,0.3",
                "--json"));
    assertThat(m.readTree(perPosition.out()).get("speculative").get("accept_length").asDouble())
        .isCloseTo(2.6, org.assertj.core.api.Assertions.within(1e-9));
    CliTest.Run rising =
        CliTest.run(
            with("--speculative-algorithm", "MTP", "--speculative-accept-per-position", "0.5,0.8"));
    assertThat(rising.status()).isEqualTo(2);
    assertThat(rising.err()).contains("exceeds the rate before it");
    CliTest.Run both =
        CliTest.run(
            with(
                "--speculative-algorithm",
                "MTP",
                "--speculative-accept-length",
                "2",
                "--speculative-accept-from",
                bench.toString()));
    assertThat(both.status()).isEqualTo(2);
    assertThat(both.err()).contains("give the acceptance once");
  }
}
