package dev.ringmaster.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Nonsense flag values are refused with one line naming the flag and exit status 2, before any
 * model loads: the model directory given here is empty, so a check that ran after loading would
 * fail on the model instead.
 */
class FlagValidationTest {
  @TempDir Path empty;

  private void refused(String expected, String... args) {
    String[] full = new String[args.length + 2];
    System.arraycopy(args, 0, full, 0, args.length);
    full[args.length] = "--model";
    full[args.length + 1] = empty.toString();
    CliTest.Run r = CliTest.run(full);
    assertThat(r.status()).as(String.join(" ", args) + ": " + r.err()).isEqualTo(2);
    assertThat(r.err()).as(String.join(" ", args)).contains(expected).doesNotContain("\tat ");
  }

  @Test
  void generateFlags() {
    refused("--top-k", "generate", "hi", "--top-k", "-3");
    refused("--temperature", "generate", "hi", "--temperature", "-0.5");
    refused("--top-p", "generate", "hi", "--top-p", "1.5");
    refused("--top-p", "generate", "hi", "--top-p", "0");
    refused("--max-new-tokens", "generate", "hi", "--max-new-tokens", "0");
    refused("--dump-logits", "generate", "hi", "--dump-logits", "/no/such/dir/x.npy");
    refused("--dump-logits", "generate", "hi", "--dump-logits", empty.toString());
    refused("--tp-size", "generate", "hi", "--tp-size", "0");
  }

  @Test
  void serveFlags() {
    refused("--port", "serve", "--port", "-1");
    refused("--port", "serve", "--port", "70000");
    refused("--max-running-requests", "serve", "--max-running-requests", "0");
    refused("--page-size", "serve", "--page-size", "0");
    refused("--mem-fraction-static", "serve", "--mem-fraction-static", "1.5");
    refused("--chunked-prefill-size", "serve", "--chunked-prefill-size", "0");
    refused("--allowed-origins", "serve", "--allowed-origins", "app.example");
  }

  @Test
  void benchOneBatchFlags() {
    refused("--batch-size", "bench", "one-batch", "--batch-size", "4,0");
    refused("--input-len", "bench", "one-batch", "--input-len", "0");
    refused("--output-len", "bench", "one-batch", "--output-len", "-2");
    refused("--warmup-rounds", "bench", "one-batch", "--warmup-rounds", "0");
    refused("--warmup-rounds", "bench", "one-batch", "--warmup-rounds", "soon");
    refused("--warmup-decode-steps", "bench", "one-batch", "--warmup-decode-steps", "-1");
    refused(
        "--shared-prefix",
        "bench",
        "one-batch",
        "--shared-prefix",
        "--speculative-num-draft-tokens",
        "2");
  }

  @Test
  void contextLengthIsCheckedFromTheConfigBeforeLoading() {
    Path fixture = CliTest.repo().resolve("fixtures/golden/deepseek_v3_basic"); // context 256
    CliTest.Run r =
        CliTest.run(
            "bench",
            "one-batch",
            "--model",
            fixture.toString(),
            "--input-len",
            "250",
            "--output-len",
            "10");
    assertThat(r.status()).isEqualTo(2);
    assertThat(r.err()).contains("context of 256").doesNotContain("loading layers");
  }

  @Test
  void serveOnABusyPortFailsAtOnceNamingThePort() throws Exception {
    try (ServerSocket taken = new ServerSocket()) {
      taken.bind(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), 0));
      int port = taken.getLocalPort();
      refused("port " + port, "serve", "--port", String.valueOf(port));
    }
  }

  @Test
  void theKvCacheLineCountsTheModelsOwnBytes() {
    // An H200's V2-Lite pool: bf16 latent rows, 2 x 27 x 576 bytes a token.
    assertThat(ServeCommand.kvCacheLine(3_355_328, 209_708, 16, 31_104))
        .isEqualTo("KV cache 3355328 tokens (209708 blocks of 16, 104.36 GB)");
    assertThat(ServeCommand.kvCacheLine(4096, 256, 16, 1000))
        .isEqualTo("KV cache 4096 tokens (256 blocks of 16, 4.1 MB)");
  }
}
