package dev.ringmaster.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ringmaster.backend.cpu.model.CausalLm;
import dev.ringmaster.engine.batch.BatchConfig;
import dev.ringmaster.engine.batch.BatchEngine;
import dev.ringmaster.model.tokenizer.Tokenizer;
import dev.ringmaster.server.RingmasterServer;
import dev.ringmaster.server.ServerConfig;
import dev.ringmaster.server.ServingModel;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@code ringmaster bench serve} against a real server on loopback (the tiny golden MoE, with a
 * chat template added), for every backend: the JSON line has sglang's keys and its figures agree
 * with each other.
 */
class BenchServeCliTest {
  static final List<String> SGLANG_KEYS =
      List.of(
          "tag",
          "backend",
          "dataset_name",
          "request_rate",
          "max_concurrency",
          "sharegpt_output_len",
          "random_input_len",
          "random_output_len",
          "random_range_ratio",
          "server_info",
          "duration",
          "completed",
          "total_input_tokens",
          "total_input_text_tokens",
          "total_input_vision_tokens",
          "total_output_tokens",
          "total_output_tokens_retokenized",
          "request_throughput",
          "input_throughput",
          "output_throughput",
          "total_throughput",
          "mean_e2e_latency_ms",
          "median_e2e_latency_ms",
          "std_e2e_latency_ms",
          "p99_e2e_latency_ms",
          "mean_ttft_ms",
          "median_ttft_ms",
          "std_ttft_ms",
          "p99_ttft_ms",
          "mean_tpot_ms",
          "median_tpot_ms",
          "std_tpot_ms",
          "p99_tpot_ms",
          "mean_itl_ms",
          "median_itl_ms",
          "std_itl_ms",
          "p95_itl_ms",
          "p99_itl_ms",
          "concurrency",
          "accept_length",
          "max_output_tokens_per_s",
          "max_concurrent_requests");

  static RingmasterServer server;
  static CausalLm lm;
  static Path modelDir;
  static BatchEngine engine;

  @BeforeAll
  static void startServer(@TempDir Path tmp) throws Exception {
    Path fixture = CliTest.repo().resolve("fixtures/golden/deepseek_v3_basic");
    modelDir = tmp.resolve("tiny-moe");
    Files.createDirectories(modelDir);
    try (var files = Files.list(fixture)) {
      for (Path f : files.toList()) {
        if (!f.getFileName().toString().equals("tokenizer_config.json")) {
          Files.copy(f, modelDir.resolve(f.getFileName()));
        }
      }
    }
    ObjectMapper m = new ObjectMapper();
    ObjectNode cfg = (ObjectNode) m.readTree(fixture.resolve("tokenizer_config.json").toFile());
    cfg.put(
        "chat_template",
        "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
            + "{% if add_generation_prompt %}assistant:{% endif %}");
    Files.writeString(modelDir.resolve("tokenizer_config.json"), m.writeValueAsString(cfg));
    lm = CausalLm.load(modelDir);
    engine = BatchEngine.start(lm, new BatchConfig(64, 256, 64, 16, 1024));
    server =
        RingmasterServer.start(
            new ServingModel("tiny-moe", modelDir.toString(), Tokenizer.load(modelDir), engine),
            ServerConfig.defaults());
  }

  @AfterAll
  static void stopServer() {
    server.close();
    lm.close();
  }

  static CliTest.Run bench(Path out, String... extra) {
    List<String> args =
        new ArrayList<>(
            List.of(
                "bench",
                "serve",
                "--base-url",
                server.url(),
                "--num-prompts",
                "8",
                "--random-input-len",
                "16",
                "--random-output-len",
                "8",
                "--random-range-ratio",
                "1",
                "--disable-tqdm",
                "--output-file",
                out.toString()));
    args.addAll(List.of(extra));
    return CliTest.run(args.toArray(String[]::new));
  }

  @ParameterizedTest
  @CsvSource({
    "sglang, random, 4",
    "ringmaster, random-ids, 2",
    "openai, random, 3",
    "sglang-oai, random-ids, 8",
    "openai-chat, random, 4"
  })
  void everyBackendReportsConsistentFigures(
      String backend, String dataset, int concurrency, @TempDir Path tmp) throws Exception {
    Path out = tmp.resolve("out.jsonl");
    CliTest.Run r =
        bench(
            out,
            "--backend",
            backend,
            "--dataset-name",
            dataset,
            "--max-concurrency",
            String.valueOf(concurrency));
    assertThat(r.status()).as(r.err()).isZero();
    assertThat(r.out())
        .contains("============ Serving Benchmark Result ============")
        .contains("Backend:                                 " + backend)
        .contains("Max request concurrency:                 " + concurrency)
        .contains("Successful requests:                     8")
        .contains("Total generated tokens:                  64")
        .contains("---------------Time to First Token----------------")
        .contains("Mean ITL (ms):");
    List<String> lines = Files.readAllLines(out);
    assertThat(lines).hasSize(1);
    JsonNode o = new ObjectMapper().readTree(lines.getFirst());
    for (String k : SGLANG_KEYS) {
      assertThat(o.has(k)).as("key %s", k).isTrue();
    }
    assertThat(o.get("backend").asText()).isEqualTo(backend);
    assertThat(o.get("dataset_name").asText()).isEqualTo(dataset);
    assertThat(o.get("request_rate").asText()).isEqualTo("inf");
    assertThat(o.get("max_concurrency").asInt()).isEqualTo(concurrency);
    assertThat(o.get("completed").asInt()).isEqualTo(8);
    assertThat(o.get("total_input_tokens").asLong()).isEqualTo(8 * 16);
    // ignore_eos: every request runs to its length, counted by the server
    assertThat(o.get("total_output_tokens").asLong()).isEqualTo(8 * 8);
    double duration = o.get("duration").asDouble();
    assertThat(duration).isPositive();
    assertThat(o.get("request_throughput").asDouble()).isCloseTo(8 / duration, within(1e-6));
    assertThat(o.get("input_throughput").asDouble()).isCloseTo(128 / duration, within(1e-6));
    assertThat(o.get("output_throughput").asDouble()).isCloseTo(64 / duration, within(1e-6));
    assertThat(o.get("total_throughput").asDouble()).isCloseTo(192 / duration, within(1e-6));
    for (String s : List.of("mean", "median", "p99")) {
      assertThat(o.get(s + "_ttft_ms").asDouble())
          .as(s + " TTFT <= E2E")
          .isPositive()
          .isLessThanOrEqualTo(o.get(s + "_e2e_latency_ms").asDouble());
    }
    assertThat(o.get("mean_tpot_ms").asDouble()).isPositive();
    assertThat(o.get("mean_itl_ms").asDouble()).isPositive();
    assertThat(o.get("p99_itl_ms").asDouble())
        .isGreaterThanOrEqualTo(o.get("median_itl_ms").asDouble());
    // the requests in flight on average: the latencies' sum over the duration
    double sumE2eS = 8 * o.get("mean_e2e_latency_ms").asDouble() / 1000;
    assertThat(o.get("concurrency").asDouble()).isCloseTo(sumE2eS / duration, within(1e-6));
    assertThat(o.get("concurrency").asDouble()).isLessThanOrEqualTo(concurrency + 1e-9);
    // sglang's peak: requests in flight during the busiest wall-clock second
    assertThat(o.get("max_concurrent_requests").asInt()).isBetween(1, 8);
    assertThat(o.get("accept_length").isNull()).isTrue();
    assertThat(o.get("server_info").get("served_model_name").asText()).isEqualTo("tiny-moe");
    assertThat(o.get("failed").asInt()).isZero();
    // the server's own breakdown of the timed requests' TTFT, from its /metrics
    JsonNode server = o.get("server_ttft_breakdown_ms");
    for (String k : List.of("ttft", "queue_time", "prefill_waiting", "prefill_forward")) {
      assertThat(server.get(k).asDouble()).as("server %s", k).isPositive();
    }
    assertThat(server.get("prefill_steps_per_request").asDouble()).isGreaterThanOrEqualTo(1);
    assertThat(server.get("ttft").asDouble()).isLessThan(o.get("mean_ttft_ms").asDouble());
    assertThat(r.out()).contains("Server prefill_forward (ms):");
    if (backend.equals("sglang") || backend.equals("ringmaster")) {
      // the native API streams token ids: the first token is seen no later than the first text
      assertThat(o.get("mean_ttft_first_token_ms").asDouble())
          .isPositive()
          .isLessThanOrEqualTo(o.get("mean_ttft_ms").asDouble());
    } else {
      assertThat(o.get("mean_ttft_first_token_ms").isNull()).isTrue();
    }
  }

  /**
   * Tokens forced (logit bias) to the lead byte of a UTF-8 character carry no text until the end:
   * the TTFT sglang measures (the first chunk with text) is then the whole latency, while the first
   * token's time is that of the first chunk.
   */
  @Test
  void firstTokenTimeDoesNotWaitForText(@TempDir Path tmp) throws Exception {
    Tokenizer tokenizer = Tokenizer.load(modelDir);
    int lead = -1;
    int vocab = Math.min(tokenizer.vocabSize(), lm.config().vocabSize());
    for (int id = 0; id < vocab && lead < 0; id++) {
      byte[] b = tokenizer.tokenBytes(id);
      if (b != null && b.length == 1 && (b[0] & 0xF0) == 0xE0) {
        lead = id;
      }
    }
    assertThat(lead).as("a byte-level token for a UTF-8 lead byte").isNotNegative();
    Path out = tmp.resolve("out.jsonl");
    CliTest.Run r =
        bench(
            out,
            "--dataset-name",
            "random-ids",
            "--max-concurrency",
            "1",
            "--extra-request-body",
            "{\"sampling_params\": {\"logit_bias\": {\"" + lead + "\": 100}}}",
            "--output-details");
    assertThat(r.status()).as(r.err()).isZero();
    assertThat(r.out()).contains("Median TTFT, any token (ms):");
    JsonNode o = new ObjectMapper().readTree(Files.readAllLines(out).getFirst());
    double firstText = o.get("median_ttft_ms").asDouble();
    double firstToken = o.get("median_ttft_first_token_ms").asDouble();
    assertThat(firstToken).isPositive().isLessThan(firstText);
    assertThat(firstText).isLessThanOrEqualTo(o.get("median_e2e_latency_ms").asDouble());
    // no chunk before the final one had text, so no inter-token gap was measured
    assertThat(o.get("mean_itl_ms").asDouble()).isZero();
    assertThat(o.get("ttfts_first_token")).hasSize(8).allMatch(JsonNode::isNumber);
  }

  @Test
  void poissonArrivalsHistoryPlotAndDetails(@TempDir Path tmp) throws Exception {
    Path out = tmp.resolve("out.jsonl");
    Path history = tmp.resolve("history.jsonl");
    Path png = tmp.resolve("latency.png");
    CliTest.Run r =
        bench(
            out,
            "--backend",
            "openai",
            "--dataset-name",
            "random",
            "--request-rate",
            "40",
            "--seed",
            "3",
            "--tokenizer",
            modelDir.toString(),
            "--output-details",
            "--history",
            history.toString(),
            "--plot",
            png.toString(),
            "--json");
    assertThat(r.status()).as(r.err()).isZero();
    JsonNode o = new ObjectMapper().readTree(r.out());
    assertThat(o.get("request_rate").asDouble()).isEqualTo(40.0);
    assertThat(o.get("max_concurrency").isNull()).isTrue();
    assertThat(o.get("output_lens")).hasSize(8).allMatch(n -> n.asInt() == 8);
    assertThat(o.get("itls")).hasSize(8);
    assertThat(o.get("errors")).allMatch(n -> n.asText().isEmpty());
    // Poisson arrivals at 40/s: 8 requests span ~7 gaps of 25 ms on average
    assertThat(o.get("duration").asDouble()).isGreaterThan(0.02);
    assertThat(Files.readAllLines(out)).hasSize(1);
    JsonNode rec = new ObjectMapper().readTree(Files.readAllLines(history).getFirst());
    assertThat(rec.get("benchmark").asText()).isEqualTo("serve");
    assertThat(rec.get("command").asText())
        .startsWith("ringmaster bench serve --base-url")
        .contains("--request-rate 40");
    assertThat(rec.get("machine").get("cores").asInt()).isPositive();
    assertThat(rec.has("commit")).isTrue();
    assertThat(rec.get("results").get("completed").asInt()).isEqualTo(8);
    byte[] head = Files.readAllBytes(png);
    assertThat(head.length).isGreaterThan(1000);
    assertThat(new String(head, 1, 3, java.nio.charset.StandardCharsets.US_ASCII)).isEqualTo("PNG");
  }

  /**
   * A real {@code bench one-batch --json} of the served model is the reference: its JSON keeps the
   * decode keys and adds the totals, and {@code bench serve} prints and records its output
   * throughput as a share of both at the batch size equal to {@code --max-concurrency}.
   */
  @Test
  void outputThroughputAsAShareOfOneBatch(@TempDir Path tmp) throws Exception {
    CliTest.Run ob =
        CliTest.run(
            "bench",
            "one-batch",
            "--model",
            modelDir.toString(),
            "--batch-size",
            "1,2",
            "--input-len",
            "16",
            "--output-len",
            "8",
            "--warmup-decode-steps",
            "2",
            "--json");
    assertThat(ob.status()).as(ob.err()).isZero();
    JsonNode oneBatch = new ObjectMapper().readTree(ob.out());
    JsonNode b2 = oneBatch.get("results").get(1);
    for (String k :
        List.of(
            "batch_size",
            "input_len",
            "output_len",
            "prefill_ms",
            "prefill_tokens_per_s",
            "decode_median_ms",
            "decode_tokens_per_s",
            "total_latency_ms",
            "total_output_tokens_per_s",
            "total_tokens_per_s")) {
      assertThat(b2.has(k)).as("one-batch key %s", k).isTrue();
    }
    double total = b2.get("total_latency_ms").asDouble();
    assertThat(total).isGreaterThan(b2.get("prefill_ms").asDouble());
    assertThat(b2.get("total_output_tokens_per_s").asDouble())
        .isCloseTo(2 * 8 * 1000 / total, within(1e-6));
    assertThat(b2.get("total_tokens_per_s").asDouble())
        .isCloseTo(2 * (16 + 8) * 1000 / total, within(1e-6));
    Path ref = tmp.resolve("one-batch.json");
    Files.writeString(ref, ob.out());

    Path out = tmp.resolve("out.jsonl");
    CliTest.Run r =
        bench(
            out,
            "--dataset-name",
            "random-ids",
            "--max-concurrency",
            "2",
            "--compare-one-batch",
            ref.toString());
    assertThat(r.status()).as(r.err()).isZero();
    assertThat(r.out())
        .contains("-------------Share of bench one-batch-------------")
        .contains("One-batch batch size:                    2")
        .contains("Output tok/s / one-batch total (%):")
        .doesNotContain("note: one-batch ran");
    JsonNode o = new ObjectMapper().readTree(Files.readAllLines(out).getFirst());
    JsonNode c = o.get("one_batch_comparison");
    double served = o.get("output_throughput").asDouble();
    assertThat(c.get("batch_size").asInt()).isEqualTo(2);
    assertThat(c.get("decode_share").asDouble())
        .isCloseTo(served / b2.get("decode_tokens_per_s").asDouble(), within(1e-9));
    assertThat(c.get("e2e_share").asDouble())
        .isCloseTo(served / b2.get("total_output_tokens_per_s").asDouble(), within(1e-9));
    assertThat(c.get("lengths_match").asBoolean()).isTrue();

    CliTest.Run noConcurrency =
        bench(out, "--dataset-name", "random", "--compare-one-batch", ref.toString());
    assertThat(noConcurrency.status()).isNotZero();
    assertThat(noConcurrency.err()).contains("--compare-one-batch needs --max-concurrency");
    CliTest.Run noSize =
        bench(
            out,
            "--dataset-name",
            "random",
            "--max-concurrency",
            "4",
            "--compare-one-batch",
            ref.toString());
    assertThat(noSize.status()).isNotZero();
    assertThat(noSize.err()).contains("no batch size 4 (it has [1, 2])");
    Path notOneBatch = tmp.resolve("x.json");
    Files.writeString(notOneBatch, "{\"completed\": 3}");
    CliTest.Run wrong =
        bench(
            out,
            "--dataset-name",
            "random",
            "--max-concurrency",
            "2",
            "--compare-one-batch",
            notOneBatch.toString());
    assertThat(wrong.err()).contains("not the output of bench one-batch --json");
    assertThat(Files.readAllLines(out)).hasSize(1); // refused before any request was sent
  }

  @Test
  void flushCacheKeepsARepeatedRunFromFindingItsPromptsCached() {
    // the same 8 prompts of 40 ids each time: two full 16-token pages per prompt to find cached
    List<String> run =
        List.of(
            "bench",
            "serve",
            "--base-url",
            server.url(),
            "--backend",
            "sglang",
            "--dataset-name",
            "random-ids",
            "--num-prompts",
            "8",
            "--random-input-len",
            "40",
            "--random-output-len",
            "8",
            "--random-range-ratio",
            "1",
            "--seed",
            "7",
            "--disable-tqdm");
    assertThat(CliTest.run(run.toArray(String[]::new)).status()).isZero();
    long before = engine.stats().cachedTokens();
    CliTest.Run again = CliTest.run(run.toArray(String[]::new));
    assertThat(again.status()).as(again.err()).isZero();
    assertThat(engine.stats().cachedTokens() - before).isGreaterThanOrEqualTo(8 * 32);
    // flushed after the warm-up: only the warm-up request (the first prompt) can hit
    before = engine.stats().cachedTokens();
    List<String> flushed = new ArrayList<>(run);
    flushed.add("--flush-cache");
    CliTest.Run r = CliTest.run(flushed.toArray(String[]::new));
    assertThat(r.status()).as(r.err()).isZero();
    assertThat(engine.stats().cachedTokens() - before).isLessThanOrEqualTo(32);
  }

  @Test
  void nonStreamingRequestsTakeTheirLatencyAsTtft(@TempDir Path tmp) throws Exception {
    Path out = tmp.resolve("out.jsonl");
    CliTest.Run r =
        bench(out, "--backend", "sglang", "--dataset-name", "random", "--disable-stream", "--json");
    assertThat(r.status()).as(r.err()).isZero();
    JsonNode o = new ObjectMapper().readTree(r.out());
    assertThat(o.get("total_output_tokens").asLong()).isEqualTo(64);
    assertThat(o.get("mean_ttft_ms").asDouble())
        .isCloseTo(o.get("mean_e2e_latency_ms").asDouble(), within(1e-9));
    assertThat(o.get("mean_itl_ms").asDouble()).isZero();
  }

  @Test
  void anUnreachableServerIsOneClearErrorAndANonZeroStatus(@TempDir Path tmp) throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    Path out = tmp.resolve("out.jsonl");
    CliTest.Run r =
        CliTest.run(
            "bench",
            "serve",
            "--port",
            String.valueOf(port),
            "--dataset-name",
            "random",
            "--output-file",
            out.toString());
    assertThat(r.status()).isNotZero();
    assertThat(r.err())
        .startsWith("error: cannot reach the server at http://127.0.0.1:" + port)
        .doesNotContain("\tat ");
    assertThat(out).doesNotExist();
  }

  @Test
  void badValuesAreRefusedNamingTheFlag() {
    CliTest.Run rate = CliTest.run("bench", "serve", "--request-rate", "fast");
    assertThat(rate.status()).isEqualTo(2);
    assertThat(rate.err()).contains("--request-rate fast is not a number");
    CliTest.Run ratio =
        CliTest.run("bench", "serve", "--dataset-name", "random", "--random-range-ratio", "2");
    assertThat(ratio.err()).contains("--random-range-ratio 2.0 must be between 0 and 1");
    CliTest.Run chatIds =
        CliTest.run("bench", "serve", "--backend", "openai-chat", "--dataset-name", "random-ids");
    assertThat(chatIds.err()).contains("chat completions cannot take");
    CliTest.Run extra =
        CliTest.run("bench", "serve", "--dataset-name", "random", "--extra-request-body", "[1]");
    assertThat(extra.err()).contains("--extra-request-body must be a JSON object");
    CliTest.Run noFile = CliTest.run("bench", "serve");
    assertThat(noFile.err()).contains("--dataset-name sharegpt needs --dataset-path");
  }
}
