package dev.ringmaster.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;

/**
 * {@code bench one-batch --speculative-num-draft-tokens} on the embedded model on the CPU: a verify
 * pass per draft length and batch size, printed and in {@code --json}.
 */
class OneBatchVerifyCliTest {
  private static String[] args(String... extra) {
    String[] base = {
      "bench",
      "one-batch",
      "--model",
      CliTest.repo().resolve("models/sotu-moe").toString(),
      "--device",
      "cpu",
      "--batch-size",
      "1,2",
      "--input-len",
      "8",
      "--output-len",
      "4",
      "--warmup-rounds",
      "1",
      "--warmup-decode-steps",
      "2",
    };
    String[] all = new String[base.length + extra.length];
    System.arraycopy(base, 0, all, 0, base.length);
    System.arraycopy(extra, 0, all, base.length, extra.length);
    return all;
  }

  @Test
  void verifyCostsPerBatchSizeAndDraftLengthInJson() throws Exception {
    CliTest.Run r = CliTest.run(args("--speculative-num-draft-tokens", "2,4", "--json"));
    assertThat(r.status()).as(r.err()).isZero();
    JsonNode results = new ObjectMapper().readTree(r.out()).get("results");
    assertThat(results).hasSize(2);
    for (JsonNode res : results) {
      JsonNode verify = res.get("verify");
      assertThat(verify).hasSize(2);
      assertThat(verify.get(0).get("draft_tokens").asInt()).isEqualTo(2);
      assertThat(verify.get(1).get("draft_tokens").asInt()).isEqualTo(4);
      double decode = res.get("decode_median_ms").asDouble();
      for (JsonNode v : verify) {
        assertThat(v.get("median_ms").asDouble()).isPositive();
        assertThat(v.get("decode_steps").asDouble())
            .isCloseTo(
                v.get("median_ms").asDouble() / decode, org.assertj.core.data.Offset.offset(1e-9));
        assertThat(v.get("repeat_median_ms").asDouble()).isPositive();
        assertThat(v.get("repeat_decode_steps").asDouble()).isPositive();
      }
    }
  }

  @Test
  void verifyTableIsPrintedAndBadLengthsAreRefused() {
    CliTest.Run r = CliTest.run(args("--speculative-num-draft-tokens", "3"));
    assertThat(r.status()).as(r.err()).isZero();
    assertThat(r.out()).contains("decode steps").contains("verify: K draft tokens per sequence");
    assertThat(r.out().lines().filter(l -> l.matches("\\s+[12]\\s+3(\\s+[0-9.]+){4}"))).hasSize(2);
    CliTest.Run zero = CliTest.run(args("--speculative-num-draft-tokens", "0"));
    assertThat(zero.status()).isEqualTo(2);
    assertThat(zero.err()).contains("--speculative-num-draft-tokens");
    CliTest.Run past =
        CliTest.run(
            "bench",
            "one-batch",
            "--model",
            CliTest.repo().resolve("models/sotu-moe").toString(),
            "--device",
            "cpu",
            "--input-len",
            "1015",
            "--output-len",
            "4",
            "--speculative-num-draft-tokens",
            "8");
    assertThat(past.status()).isEqualTo(2);
    assertThat(past.err()).contains("verify pass of --speculative-num-draft-tokens 8");
  }
}
