package dev.ringmaster.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * {@code --indexer-cache-dtype} reaches the model: {@code bench one-batch} on the DeepSeek-V3.2
 * fixture reports the choice and the KV bytes a token costs with it (two layers of f32 latent 16 +
 * rotary key 8, both indexed with 16-value keys: 64 bytes of f32 or 16 codes and a 4-byte scale).
 */
class IndexerCacheDtypeCliTest {
  private static final Path DSA = CliTest.repo().resolve("fixtures/golden/deepseek_v32_dsa");

  private static JsonNode oneBatch(String... extra) throws Exception {
    String[] base = {
      "bench",
      "one-batch",
      "--model",
      DSA.toString(),
      "--batch-size",
      "1",
      "--input-len",
      "24",
      "--output-len",
      "4",
      "--warmup-rounds",
      "1",
      "--cpu-warmup-steps",
      "0",
      "--json"
    };
    String[] args = new String[base.length + extra.length];
    System.arraycopy(base, 0, args, 0, base.length);
    System.arraycopy(extra, 0, args, base.length, extra.length);
    CliTest.Run r = CliTest.run(args);
    assertThat(r.status()).as(r.err()).isZero();
    return new ObjectMapper().readTree(r.out());
  }

  @Test
  void oneBatchReportsTheFormatAndItsBytesPerToken() throws Exception {
    JsonNode plain = oneBatch();
    assertThat(plain.get("kernel_tuning").get("indexer-cache-dtype").asText()).isEqualTo("auto");
    assertThat(plain.get("kv_bytes_per_token").asLong()).isEqualTo(4L * 2 * (16 + 8) + 2L * 4 * 16);
    JsonNode fp8 = oneBatch("--indexer-cache-dtype", "fp8_e4m3");
    assertThat(fp8.get("kernel_tuning").get("indexer-cache-dtype").asText()).isEqualTo("fp8_e4m3");
    assertThat(fp8.get("kv_bytes_per_token").asLong()).isEqualTo(4L * 2 * (16 + 8) + 2L * (16 + 4));
  }
}
