package dev.ringmaster.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The command line as a user runs it: outputs, JSON fields, and one-line errors. */
class CliTest {
  record Run(int status, String out, String err) {}

  static Path repo() {
    Path p = Path.of("").toAbsolutePath();
    while (!Files.isDirectory(p.resolve(".ci"))) {
      p = p.getParent();
    }
    return p;
  }

  /**
   * The reference outputs of a fixture directory (its gzip-compressed {@code reference.json.gz}).
   */
  static JsonNode reference(Path fixture) throws java.io.IOException {
    try (var in =
        new java.util.zip.GZIPInputStream(
            Files.newInputStream(fixture.resolve("reference.json.gz")))) {
      return new ObjectMapper().readTree(in);
    }
  }

  static Run run(String... args) {
    PrintStream oldOut = System.out;
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    StringWriter err = new StringWriter();
    try {
      System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
      var cl = Main.commandLine();
      cl.setErr(new PrintWriter(err, true));
      int status = cl.execute(args);
      return new Run(status, out.toString(StandardCharsets.UTF_8), err.toString());
    } finally {
      System.setOut(oldOut);
    }
  }

  @Test
  void generateJsonReproducesTransformersGreedyTokens() throws Exception {
    Path fixture = repo().resolve("fixtures/golden/deepseek_v2_qlora_yarn_group");
    JsonNode ref = reference(fixture);
    String ids =
        java.util.stream.StreamSupport.stream(ref.get("prompt_ids").spliterator(), false)
            .map(JsonNode::asText)
            .collect(Collectors.joining(","));
    int n = ref.get("greedy_ids").size();
    Run r =
        run(
            "generate",
            "--model",
            fixture.toString(),
            "--prompt-ids",
            ids,
            "--max-new-tokens",
            String.valueOf(n),
            "--temperature",
            "0",
            "--ignore-eos",
            "--json");
    assertThat(r.status()).as(r.err()).isZero();
    JsonNode o = new ObjectMapper().readTree(r.out());
    assertThat(o.get("output_ids")).isEqualTo(ref.get("greedy_ids"));
    assertThat(o.get("prompt_ids")).isEqualTo(ref.get("prompt_ids"));
    assertThat(o.has("text")).isTrue();
    assertThat(o.get("prefill_ms").asDouble()).isPositive();
    assertThat(o.get("decode_tokens_per_s").asDouble()).isPositive();
  }

  @Test
  void tensorParallelGenerateGivesTheSameTokens() throws Exception {
    Path fixture = repo().resolve("fixtures/golden/qwen3_moe_basic");
    Run one =
        run(
            "generate",
            "--model",
            fixture.toString(),
            "hello",
            "--max-new-tokens",
            "8",
            "--ignore-eos",
            "--json");
    Run tp2 =
        run(
            "generate",
            "--model",
            fixture.toString(),
            "hello",
            "--max-new-tokens",
            "8",
            "--ignore-eos",
            "--json",
            "--tp-size",
            "2");
    assertThat(one.status()).as(one.err()).isZero();
    assertThat(tp2.status()).as(tp2.err()).isZero();
    var m = new ObjectMapper();
    assertThat(m.readTree(tp2.out()).get("output_ids"))
        .isEqualTo(m.readTree(one.out()).get("output_ids"));
  }

  @Test
  void tokenizeAndDecodeRoundTrip() {
    Path fixture = repo().resolve("fixtures/golden/deepseek_v3_basic");
    Run enc = run("tokenize", "--model", fixture.toString(), "--no-special", "hello world");
    assertThat(enc.status()).as(enc.err()).isZero();
    Run dec = run("tokenize", "--model", fixture.toString(), "--decode", enc.out().strip());
    assertThat(dec.out().strip()).isEqualTo("hello world");
  }

  @Test
  void modelInfoDescribesGlm5SparseAttention() throws Exception {
    Run r = run("model", "info", "--config", repo().resolve("configs/glm5.json").toString());
    assertThat(r.status()).as(r.err()).isZero();
    JsonNode j = new ObjectMapper().readTree(r.out());
    assertThat(j.get("model_type").asText()).isEqualTo("glm_moe_dsa");
    assertThat(j.get("index_topk").asInt()).isEqualTo(2048);
    assertThat(j.get("index_heads").asInt()).isEqualTo(32);
    assertThat(j.get("indexed_layers").asInt()).isEqualTo(78);
    // Per layer: latent 512 + rotary key 64 + indexer key 128, in f32 on the CPU, bf16 on the GPU.
    assertThat(j.get("kv_bytes_per_token_cpu").asLong()).isEqualTo(4L * 78 * (512 + 64 + 128));
    assertThat(j.get("kv_bytes_per_token_gpu").asLong()).isEqualTo(2L * 78 * (512 + 64 + 128));
    assertThat(j.get("indexer_cache_dtype").asText()).isEqualTo("auto");
    assertThat(j.get("indexer_bytes_per_token_gpu").asLong()).isEqualTo(2L * 78 * 128);
    // FP8 keys: 128 codes and one f32 scale per indexed layer on both backends.
    Run fp8 =
        run(
            "model",
            "info",
            "--config",
            repo().resolve("configs/glm5.json").toString(),
            "--indexer-cache-dtype",
            "fp8_e4m3");
    assertThat(fp8.status()).as(fp8.err()).isZero();
    JsonNode k = new ObjectMapper().readTree(fp8.out());
    assertThat(k.get("indexer_cache_dtype").asText()).isEqualTo("fp8_e4m3");
    assertThat(k.get("indexer_bytes_per_token_cpu").asLong()).isEqualTo(78L * (128 + 4));
    assertThat(k.get("indexer_bytes_per_token_gpu").asLong()).isEqualTo(78L * (128 + 4));
    assertThat(k.get("kv_bytes_per_token_cpu").asLong())
        .isEqualTo(4L * 78 * (512 + 64) + 78L * 132);
    assertThat(k.get("kv_bytes_per_token_gpu").asLong())
        .isEqualTo(2L * 78 * (512 + 64) + 78L * 132);
    Run bad =
        run(
            "model",
            "info",
            "--config",
            repo().resolve("configs/glm5.json").toString(),
            "--indexer-cache-dtype",
            "int8");
    assertThat(bad.status()).isEqualTo(2);
    assertThat(bad.err()).contains("--indexer-cache-dtype must be auto or fp8_e4m3, got 'int8'");
  }

  @Test
  void randomSparseAttentionModelLoadsAndGenerates(@TempDir Path tmp) {
    Path cfg = repo().resolve("fixtures/golden/glm_moe_dsa_shared/config.json");
    Run w =
        run("model", "random", "--config", cfg.toString(), "--out", tmp.toString(), "--seed", "5");
    assertThat(w.status()).as(w.err()).isZero();
    Run g =
        run(
            "generate",
            "--model",
            tmp.toString(),
            "--prompt-ids",
            "3,4,5,6,7,8,9,10,11,12,13,14",
            "--max-new-tokens",
            "4",
            "--json");
    assertThat(g.status()).as(g.err()).isZero();
  }

  @Test
  void randomModelOfAFixtureConfigLoadsAndGenerates(@TempDir Path tmp) {
    Path cfg = repo().resolve("fixtures/golden/deepseek_v3_basic/config.json");
    Run w =
        run("model", "random", "--config", cfg.toString(), "--out", tmp.toString(), "--seed", "3");
    assertThat(w.status()).as(w.err()).isZero();
    assertThat(w.out()).contains("parameters");
    Run g =
        run(
            "generate",
            "--model",
            tmp.toString(),
            "--prompt-ids",
            "1,2,3",
            "--max-new-tokens",
            "4",
            "--json");
    assertThat(g.status()).as(g.err()).isZero();
  }

  @Test
  void quantizedModelGeneratesTheFixtureGreedyTokens(@TempDir Path tmp) throws Exception {
    Path src = repo().resolve("fixtures/quantized/deepseek_v3_source");
    Run q =
        run(
            "model",
            "quantize",
            "--model",
            src.toString(),
            "--out",
            tmp.toString(),
            "--format",
            "nvfp4",
            "--exclude",
            "*self_attn*,model.layers.0.mlp");
    assertThat(q.status()).as(q.err()).isZero();
    assertThat(q.out()).contains("quantized to nvfp4");
    var ref = reference(repo().resolve("fixtures/quantized/deepseek_v3_nvfp4"));
    List<String> prompt = new java.util.ArrayList<>();
    ref.get("prompt_ids").forEach(n -> prompt.add(n.asText()));
    Run g =
        run(
            "generate",
            "--model",
            tmp.toString(),
            "--prompt-ids",
            String.join(",", prompt),
            "--max-new-tokens",
            String.valueOf(ref.get("greedy_ids").size()),
            "--temperature",
            "0",
            "--ignore-eos",
            "--json");
    assertThat(g.status()).as(g.err()).isZero();
    assertThat(g.out().replace(" ", "")).contains(ref.get("greedy_ids").toString());
    Run bad =
        run("model", "quantize", "--model", src.toString(), "--out", tmp + "2", "--format", "int4");
    assertThat(bad.status()).isEqualTo(2);
    assertThat(bad.err()).contains("--format").contains("fp8 or nvfp4");
  }

  @Test
  void gpuTensorParallelNamesTheDimensionThatDoesNotDivide() {
    Path fixture = repo().resolve("fixtures/golden/deepseek_v3_basic");
    Run r =
        run("generate", "--model", fixture.toString(), "x", "--device", "cuda", "--tp-size", "3");
    assertThat(r.status()).as(r.err()).isEqualTo(2);
    assertThat(r.err())
        .startsWith("error: ")
        .contains("num_attention_heads (8) is not divisible by --tp-size 3");
  }

  @Test
  void errorsAreOneLineWithExitStatusTwo() {
    Path fixture = repo().resolve("fixtures/golden/deepseek_v3_basic");
    for (String[] args :
        new String[][] {
          {"generate", "--model", "/no/such/model", "x"},
          {"generate", "--model", fixture.toString()},
          {"generate", "--model", fixture.toString(), "--prompt-ids", "1,99999"},
          {"generate", "--model", fixture.toString(), "x", "--temperature", "-1"},
          {"generate", "--model", fixture.toString(), "x", "--tp-size", "3"},
          {"generate", "--model", fixture.toString(), "x", "--device", "cuda"},
          {"generate", "--model", fixture.toString(), "x", "--device", "cuda", "--tp-size", "2"},
          {
            "generate",
            "--model",
            fixture.toString(),
            "x",
            "--device",
            "cuda",
            "--tp-size",
            "2",
            "--moe-a2a-backend",
            "all-to-all",
            "--ep-size",
            "2"
          },
          {
            "generate",
            "--model",
            fixture.toString(),
            "x",
            "--tp-size",
            "2",
            "--moe-a2a-backend",
            "all-to-all"
          },
          {"tokenize", "--model", fixture.toString(), "--decode", "[1, x]"},
          {"bench", "collectives", "--device", "cuda", "--nnodes", "2"},
          {
            "bench",
            "collectives",
            "--device",
            "cuda",
            "--world-size",
            "3",
            "--nnodes",
            "2",
            "--dist-init-addr",
            "127.0.0.1:29500"
          },
          {"bench", "collectives", "--device", "cuda", "--allreduce", "bogus"},
          {"bench", "collectives", "--device", "tpu"},
          {"bench", "one-batch", "--device", "cpu", "--profile"},
        }) {
      Run r = run(args);
      assertThat(r.status()).as(Arrays.toString(args) + " -> " + r.err()).isEqualTo(2);
      assertThat(r.err()).as(Arrays.toString(args)).startsWith("error: ").doesNotContain("\tat ");
    }
  }
}
