package dev.ringmaster.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * {@code --cpu-warmup-steps}, {@code --cpu-warmup-batch-size} and {@code --cpu-warmup-seconds}:
 * listed in help, refused when out of range, and harmless to outputs.
 */
class WarmupCliTest {
  private static final Path FIXTURE = CliTest.repo().resolve("fixtures/golden/deepseek_v3_basic");

  @Test
  void helpOfEveryModelCommandListsTheFlag() {
    for (String[] cmd :
        new String[][] {
          {"generate", "--help"}, {"serve", "--help"}, {"bench", "one-batch", "--help"}
        }) {
      CliTest.Run r = CliTest.run(cmd);
      assertThat(r.status()).as(String.join(" ", cmd)).isZero();
      assertThat(r.out()).contains("--cpu-warmup-steps").contains("(default: 64); 0 skips it");
      assertThat(r.out()).contains("--cpu-warmup-batch-size").contains("(default: 32 for serve");
      assertThat(r.out()).contains("--cpu-warmup-seconds").contains("0 runs the fixed rounds only");
    }
  }

  @Test
  void benchHelpStatesTheSettlingShare() {
    CliTest.Run r = CliTest.run("bench", "one-batch", "--help");
    assertThat(r.status()).isZero();
    // A bare percent sign in a description makes picocli print the raw text with a warning.
    assertThat(r.out()).contains("compilation under 2% of the");
    assertThat(r.err()).doesNotContain("Could not format");
  }

  @Test
  void negativeStepsAreRefusedByName() {
    CliTest.Run r =
        CliTest.run("generate", "--model", FIXTURE.toString(), "hello", "--cpu-warmup-steps", "-1");
    assertThat(r.status()).isNotZero();
    assertThat(r.err()).contains("--cpu-warmup-steps must not be negative, got -1");
  }

  @Test
  void negativeSettleSecondsAreRefusedByName() {
    CliTest.Run r =
        CliTest.run(
            "generate", "--model", FIXTURE.toString(), "hello", "--cpu-warmup-seconds", "-2");
    assertThat(r.status()).isNotZero();
    assertThat(r.err()).contains("--cpu-warmup-seconds must be at least 0, got -2");
  }

  @Test
  void batchSizeBelowOneIsRefusedByName() {
    CliTest.Run r =
        CliTest.run(
            "generate", "--model", FIXTURE.toString(), "hello", "--cpu-warmup-batch-size", "0");
    assertThat(r.status()).isNotZero();
    assertThat(r.err()).contains("--cpu-warmup-batch-size must be at least 1, got 0");
  }

  @Test
  void warmUpLeavesGreedyOutputUnchanged() {
    String[] args = {
      "generate", "--model", FIXTURE.toString(), "hello", "--max-new-tokens", "8", "--ignore-eos"
    };
    CliTest.Run warm = CliTest.run(args);
    String[] cold = java.util.Arrays.copyOf(args, args.length + 2);
    cold[args.length] = "--cpu-warmup-steps";
    cold[args.length + 1] = "0";
    CliTest.Run none = CliTest.run(cold);
    assertThat(warm.status()).as(warm.err()).isZero();
    assertThat(none.status()).as(none.err()).isZero();
    assertThat(warm.out()).isNotBlank().isEqualTo(none.out());
  }
}
