package dev.ringmaster.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ringmaster.backend.DType;
import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.model.config.ModelConfigParser;
import dev.ringmaster.model.random.RandomEagle3HeadWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** {@code generate --speculative-*}: same greedy tokens, acceptance in --json, and flag errors. */
class SpeculativeCliTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  private static JsonNode generate(Path model, String prompt, String... extra) throws Exception {
    List<String> args =
        new ArrayList<>(
            List.of(
                "generate",
                "--model",
                model.toString(),
                prompt,
                "--max-new-tokens",
                "24",
                "--temperature",
                "0",
                "--ignore-eos",
                "--json"));
    args.addAll(Arrays.asList(extra));
    CliTest.Run r = CliTest.run(args.toArray(String[]::new));
    assertThat(r.status()).as(r.err()).isZero();
    return JSON.readTree(r.out());
  }

  @Test
  void standaloneWithTheEmbeddedDraftGivesThePlainGreedyTokens() throws Exception {
    Path model = CliTest.repo().resolve("models/sotu-moe");
    String prompt = "Mr. Speaker, Mr. Vice President, Members of Congress";
    JsonNode plain = generate(model, prompt);
    JsonNode spec =
        generate(
            model,
            prompt,
            "--speculative-algorithm",
            "standalone",
            "--speculative-num-draft-tokens",
            "3");
    assertThat(spec.get("output_ids")).isEqualTo(plain.get("output_ids"));
    assertThat(plain.has("speculative")).isFalse();
    JsonNode s = spec.get("speculative");
    assertThat(s.get("algorithm").asText()).isEqualTo("STANDALONE");
    assertThat(s.get("num_draft_tokens").asInt()).isEqualTo(3);
    assertThat(s.get("draft_model").asText()).endsWith("draft");
    assertThat(s.get("accept_length").asDouble()).isGreaterThan(1);
    assertThat(s.get("verify_steps").asInt() + s.get("accepted_tokens").asInt()).isEqualTo(23);
    assertThat(spec.get("decode_tokens_per_s").asDouble()).isPositive();
  }

  @Test
  void ngramOnAFixtureGivesThePlainGreedyTokens() throws Exception {
    Path model = CliTest.repo().resolve("fixtures/golden/qwen3_moe_basic");
    JsonNode plain = generate(model, "hello hello hello");
    JsonNode spec = generate(model, "hello hello hello", "--speculative-algorithm", "NGRAM");
    assertThat(spec.get("output_ids")).isEqualTo(plain.get("output_ids"));
    assertThat(spec.get("speculative").get("num_draft_tokens").asInt()).isEqualTo(4);
    assertThat(spec.get("speculative").get("draft_model").isNull()).isTrue();
  }

  /**
   * {@code model random} writes the MTP layer of a config with {@code num_nextn_predict_layers} 1
   * (MLA, and DeepSeek Sparse Attention with its indexer); NEXTN then keeps the greedy tokens. The
   * 24 new tokens run the contexts past the DSA fixtures' {@code index_topk} of 8.
   */
  @ParameterizedTest
  @ValueSource(strings = {"deepseek_v3_basic", "deepseek_v32_dsa", "glm_moe_dsa_shared"})
  void nextnOnARandomModelWithAnMtpLayerGivesThePlainGreedyTokens(
      String fixtureName, @TempDir Path tmp) throws Exception {
    Path fixture = CliTest.repo().resolve("fixtures/golden/" + fixtureName);
    String cfg =
        Files.readString(fixture.resolve("config.json"))
            .replace("\"num_nextn_predict_layers\": 0", "\"num_nextn_predict_layers\": 1");
    assertThat(cfg).contains("\"num_nextn_predict_layers\": 1");
    Path config = tmp.resolve("config.json");
    Files.writeString(config, cfg);
    Path model = tmp.resolve("mtp");
    CliTest.Run written =
        CliTest.run(
            "model",
            "random",
            "--config",
            config.toString(),
            "--out",
            model.toString(),
            "--tokenizer",
            fixture.resolve("tokenizer.json").toString());
    assertThat(written.status()).as(written.err()).isZero();
    JsonNode plain = generate(model, "hello hello hello");
    JsonNode spec = generate(model, "hello hello hello", "--speculative-algorithm", "MTP");
    assertThat(spec.get("output_ids")).isEqualTo(plain.get("output_ids"));
    assertThat(spec.get("speculative").get("algorithm").asText()).isEqualTo("NEXTN");
    assertThat(spec.get("speculative").get("draft_tokens").asInt()).isPositive();
  }

  /**
   * EAGLE3 with a random head over a fixture keeps the greedy tokens; a missing head directory and
   * a directory that is not an EAGLE-3 head are one-line errors.
   */
  @Test
  void eagle3WithARandomHeadGivesThePlainGreedyTokens(@TempDir Path tmp) throws Exception {
    Path model = CliTest.repo().resolve("fixtures/golden/qwen3_moe_basic");
    Path head = tmp.resolve("head");
    ModelConfig cfg = ModelConfigParser.parse(model);
    RandomEagle3HeadWriter.write(
        RandomEagle3HeadWriter.config(cfg, 200, List.of(0, 1, 3)), head, DType.BF16, 9);
    JsonNode plain = generate(model, "hello hello hello");
    JsonNode spec =
        generate(
            model,
            "hello hello hello",
            "--speculative-algorithm",
            "eagle3",
            "--speculative-draft-model-path",
            head.toString());
    assertThat(spec.get("output_ids")).isEqualTo(plain.get("output_ids"));
    assertThat(spec.get("speculative").get("algorithm").asText()).isEqualTo("EAGLE3");
    assertThat(spec.get("speculative").get("draft_model").asText()).isEqualTo(head.toString());
    assertThat(spec.get("speculative").get("draft_tokens").asInt()).isPositive();
    String[][] cases = {
      {"--speculative-algorithm", "EAGLE3"},
      {"--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", model.toString()},
    };
    String[] expected = {
      "has no eagle3/ directory; pass --speculative-draft-model-path DIR",
      "expected LlamaForCausalLMEagle3",
    };
    for (int i = 0; i < cases.length; i++) {
      List<String> args = new ArrayList<>(List.of("generate", "--model", model.toString(), "x"));
      args.addAll(Arrays.asList(cases[i]));
      CliTest.Run r = CliTest.run(args.toArray(String[]::new));
      assertThat(r.status()).as(args + " -> " + r.err()).isEqualTo(2);
      assertThat(r.err()).as(args.toString()).startsWith("error: ").contains(expected[i]);
      assertThat(r.err()).doesNotContain("\tat ").doesNotContain("loading layers");
    }
  }

  @Test
  void badSpeculativeFlagsAreOneLineErrorsBeforeAnyModelLoads(@TempDir Path tmp) throws Exception {
    Path embedded = CliTest.repo().resolve("models/sotu-moe");
    Path fixture = CliTest.repo().resolve("fixtures/golden/deepseek_v3_basic");
    // A draft with the embedded model's config but another tokenizer.json.
    Path otherTok = tmp.resolve("other-tokenizer");
    Files.createDirectories(otherTok);
    Files.copy(embedded.resolve("draft/config.json"), otherTok.resolve("config.json"));
    Files.copy(fixture.resolve("tokenizer.json"), otherTok.resolve("tokenizer.json"));
    String[][] cases = {
      {"--speculative-num-draft-tokens", "2"},
      {"--speculative-algorithm", "eagle9"},
      {"--speculative-algorithm", "NGRAM", "--speculative-num-draft-tokens", "0"},
      {"--speculative-algorithm", "NGRAM", "--speculative-draft-model-path", fixture.toString()},
      {"--speculative-algorithm", "STANDALONE", "--speculative-draft-model-path", "/no/such/dir"},
      {
        "--speculative-algorithm",
        "STANDALONE",
        "--speculative-draft-model-path",
        fixture.toString()
      },
      {
        "--speculative-algorithm",
        "STANDALONE",
        "--speculative-draft-model-path",
        otherTok.toString()
      },
      {"--speculative-algorithm", "NGRAM", "--dump-logits", tmp.resolve("l.npy").toString()},
      {"--speculative-algorithm", "NEXTN"},
      {"--speculative-algorithm", "MTP", "--speculative-draft-model-path", fixture.toString()},
      {"--speculative-algorithm", "EAGLE3", "--tp-size", "2"},
    };
    String[] expected = {
      "--speculative-num-draft-tokens needs --speculative-algorithm",
      "unknown speculative algorithm 'eagle9'",
      "--speculative-num-draft-tokens",
      "NGRAM drafts use no model",
      "not a model directory",
      "vocabulary of 320 tokens but the target's has 6144",
      "must use the target's tokenizer (same tokenizer.json)",
      "cannot be combined with --speculative-algorithm",
      "has num_nextn_predict_layers 0: use NGRAM or STANDALONE",
      "is for STANDALONE and EAGLE3",
      "does not run with --tp-size / --ep-size above 1",
    };
    for (int i = 0; i < cases.length; i++) {
      List<String> args = new ArrayList<>(List.of("generate", "--model", embedded.toString(), "x"));
      args.addAll(Arrays.asList(cases[i]));
      CliTest.Run r = CliTest.run(args.toArray(String[]::new));
      assertThat(r.status()).as(args + " -> " + r.err()).isEqualTo(2);
      assertThat(r.err()).as(args.toString()).startsWith("error: ").contains(expected[i]);
      assertThat(r.err()).doesNotContain("\tat ").doesNotContain("loading layers");
    }
    CliTest.Run noDraft =
        CliTest.run(
            "generate",
            "--model",
            fixture.toString(),
            "x",
            "--speculative-algorithm",
            "STANDALONE");
    assertThat(noDraft.status()).isEqualTo(2);
    assertThat(noDraft.err())
        .contains("has no draft/ directory")
        .contains("--speculative-draft-model-path");
  }

  @Test
  void badServeSpeculativeFlagsAreOneLineErrorsBeforeAnyModelLoads() throws Exception {
    Path embedded = CliTest.repo().resolve("models/sotu-moe");
    Path fixture = CliTest.repo().resolve("fixtures/golden/deepseek_v3_basic");
    String[][] cases = {
      {"--speculative-policy", "auto"},
      {"--speculative-margin", "0.1"},
      {"--speculative-algorithm", "NGRAM", "--speculative-policy", "sometimes"},
      {"--speculative-algorithm", "NGRAM", "--speculative-margin", "-1"},
      {"--speculative-algorithm", "NGRAM", "--speculative-num-draft-tokens", "0"},
      {
        "--speculative-algorithm",
        "STANDALONE",
        "--speculative-draft-model-path",
        fixture.toString()
      },
      {"--speculative-algorithm", "NEXTN"},
    };
    String[] expected = {
      "--speculative-policy needs --speculative-algorithm",
      "--speculative-margin needs --speculative-algorithm",
      "unknown speculative policy 'sometimes'",
      "--speculative-margin must be a fraction",
      "--speculative-num-draft-tokens",
      "vocabulary of 320 tokens but the target's has 6144",
      "has num_nextn_predict_layers 0",
    };
    for (int i = 0; i < cases.length; i++) {
      List<String> args =
          new ArrayList<>(List.of("serve", "--model", embedded.toString(), "--port", "0"));
      args.addAll(Arrays.asList(cases[i]));
      CliTest.Run r = CliTest.run(args.toArray(String[]::new));
      assertThat(r.status()).as(args + " -> " + r.err()).isEqualTo(2);
      assertThat(r.err()).as(args.toString()).startsWith("error: ").contains(expected[i]);
      assertThat(r.err()).doesNotContain("\tat ").doesNotContain("loading layers");
    }
  }
}
