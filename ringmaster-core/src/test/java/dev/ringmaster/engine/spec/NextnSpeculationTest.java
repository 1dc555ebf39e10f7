package dev.ringmaster.engine.spec;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ringmaster.backend.DType;
import dev.ringmaster.backend.cpu.model.CausalLm;
import dev.ringmaster.engine.Generator;
import dev.ringmaster.engine.SamplingParams;
import dev.ringmaster.model.arch.CheckpointLayout;
import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.model.config.ModelConfigParser;
import dev.ringmaster.model.random.RandomModelWriter;
import dev.ringmaster.model.weights.TensorSpec;
import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.HiddenLogits;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.runtime.NextnLayer;
import dev.ringmaster.testing.GoldenFixture;
import dev.ringmaster.testing.RepoPaths;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * NEXTN: random-weight checkpoints with {@code num_nextn_predict_layers: 1} (shaped as the MLA and
 * GQA golden fixtures) hold the MTP tensors and load them; greedy output with NEXTN drafts equals
 * plain greedy output; the MTP cache rolls back; a model without MTP layers is refused.
 */
class NextnSpeculationTest {
  @TempDir static Path tmp;

  /** A random-weight copy of {@code fixture}'s config with one MTP layer. */
  static Path withMtp(String fixture, String name) throws Exception {
    ObjectMapper json = new ObjectMapper();
    Path src = RepoPaths.require(fixture).resolve("config.json");
    ObjectNode cfg = (ObjectNode) json.readTree(Files.readString(src));
    cfg.put("num_nextn_predict_layers", 1);
    Path config = tmp.resolve(name + ".json");
    Files.writeString(config, json.writeValueAsString(cfg));
    Path dir = tmp.resolve(name);
    if (!Files.exists(dir.resolve("model.safetensors"))) {
      RandomModelWriter.write(config, dir, DType.BF16, 7);
    }
    return dir;
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "fixtures/golden/deepseek_v3_basic",
        "fixtures/golden/qwen3_moe_basic",
        "fixtures/golden/deepseek_v32_dsa",
        "fixtures/golden/glm_moe_dsa_shared"
      })
  void randomModelWritesTheMtpTensorsAndTheyLoad(String fixture) throws Exception {
    Path dir = withMtp(fixture, Path.of(fixture).getFileName().toString());
    ModelConfig cfg = ModelConfigParser.parse(dir);
    int l = cfg.numLayers();
    int h = cfg.hiddenSize();
    Map<String, TensorSpec> mtp =
        CheckpointLayout.mtpTensors(cfg, DType.BF16).stream()
            .collect(Collectors.toMap(TensorSpec::name, t -> t));
    String p = "model.layers." + l + ".";
    assertThat(mtp)
        .containsKeys(
            p + "enorm.weight",
            p + "hnorm.weight",
            p + "eh_proj.weight",
            p + "shared_head.norm.weight",
            p + "input_layernorm.weight",
            p + "post_attention_layernorm.weight");
    assertThat(mtp.get(p + "eh_proj.weight").shape()).containsExactly(h, 2L * h);
    assertThat(mtp.keySet()).allMatch(n -> n.startsWith(p), "every MTP tensor is layer " + l);
    assertThat(mtp.keySet().stream().anyMatch(n -> n.startsWith(p + "self_attn."))).isTrue();
    assertThat(mtp.keySet().stream().anyMatch(n -> n.startsWith(p + "mlp."))).isTrue();
    assertThat(CheckpointLayout.tensors(cfg, DType.BF16))
        .noneMatch(t -> t.name().startsWith(p), "the main model reads no MTP tensor");
    if (cfg.sparseAttention() != null) {
      // DeepSeek-V3.2 and GLM-5 store the MTP layer as a full decoder layer: its own indexer.
      String ip = p + "self_attn.indexer.";
      assertThat(mtp)
          .containsKeys(
              ip + "wq_b.weight",
              ip + "wk.weight",
              ip + "k_norm.weight",
              ip + "k_norm.bias",
              ip + "weights_proj.weight");
      assertThat(mtp.get(ip + "wk.weight").shape())
          .containsExactly(cfg.sparseAttention().indexHeadDim(), (long) h);
    }
    try (CausalLm lm = CausalLm.load(dir)) {
      NextnLayer layer = lm.nextnLayer().orElseThrow();
      KvCache cache = layer.newCache();
      HiddenLogits out = layer.forward(new int[] {3, 4}, new float[2 * h], cache);
      assertThat(out.logits()).hasSize(cfg.vocabSize());
      assertThat(out.hidden()).hasSize(2 * h);
      assertThat(cache.length()).isEqualTo(2);
    }
  }

  @Test
  void forwardHiddenKeepsTheLogitsAndReturnsTheFinalNormedRows() throws Exception {
    try (CausalLm lm = CausalLm.load(withMtp("fixtures/golden/deepseek_v3_basic", "v3"))) {
      int[] prompt = {5, 9, 11, 2, 7};
      int[] rows = {0, 2, 4};
      KvCache a = lm.newCache();
      KvCache b = lm.newCache();
      float[] plain = lm.forward(prompt, BatchLayout.single(5, 0), new KvCache[] {a}, rows);
      HiddenLogits both =
          lm.forwardHidden(prompt, BatchLayout.single(5, 0), new KvCache[] {b}, rows);
      assertThat(both.logits()).containsExactly(plain);
      assertThat(both.hidden()).hasSize(5 * lm.config().hiddenSize());
      assertThat(b.length()).isEqualTo(5);
    }
  }

  @ParameterizedTest(name = "{0} k={1}")
  @CsvSource({
    "fixtures/golden/deepseek_v3_basic, 1",
    "fixtures/golden/deepseek_v3_basic, 3",
    "fixtures/golden/qwen3_moe_basic, 2",
    "fixtures/golden/qwen3_moe_basic, 5",
    "fixtures/golden/deepseek_v32_dsa, 1",
    "fixtures/golden/deepseek_v32_dsa, 3",
    "fixtures/golden/glm_moe_dsa_shared, 2",
    "fixtures/golden/glm_moe_dsa_shared, 4",
  })
  void greedyOutputIsPlainGreedyOutput(String fixture, int k) throws Exception {
    try (CausalLm lm = CausalLm.load(withMtp(fixture, Path.of(fixture).getFileName().toString()))) {
      int[] prompt = GoldenFixture.load(RepoPaths.require(fixture)).promptIds();
      SamplingParams greedy = new SamplingParams(0, 1, 0, 0, 40, true, List.of());
      int[] plain = new Generator(lm).generate(prompt, greedy, new int[0], t -> true).outputIds();
      SpeculativeResult r =
          new SpeculativeGenerator(lm, SpeculativeConfig.of(SpeculativeAlgorithm.NEXTN, k), null)
              .generate(prompt, greedy, new int[0], t -> true);
      assertThat(r.generation().outputIds()).containsExactly(plain);
      SpeculationStats s = r.stats();
      assertThat(s.draftTokens()).as("the MTP layer drafted").isPositive();
      assertThat(s.verifySteps() + s.acceptedTokens()).isEqualTo(plain.length - 1);
    }
  }

  /**
   * A DSA model's MTP layer selects with its own indexer: it caches indexer keys, and over a
   * context longer than {@code index_topk} its logits change when the top-k is raised above the
   * context (dense attention), while over a context within the top-k they do not.
   */
  @ParameterizedTest
  @ValueSource(strings = {"fixtures/golden/deepseek_v32_dsa", "fixtures/golden/glm_moe_dsa_shared"})
  void theMtpLayerOfASparseAttentionModelAttendsToItsIndexerSelection(String fixture)
      throws Exception {
    String name = Path.of(fixture).getFileName().toString();
    Path sparse = withMtp(fixture, name);
    Path dense = tmp.resolve(name + "-dense");
    Files.createDirectories(dense);
    try (var files = Files.list(sparse)) {
      for (Path f : files.toList()) {
        Files.copy(f, dense.resolve(f.getFileName()));
      }
    }
    ObjectMapper json = new ObjectMapper();
    ObjectNode cfg = (ObjectNode) json.readTree(Files.readString(dense.resolve("config.json")));
    cfg.put("index_topk", 1024);
    Files.writeString(dense.resolve("config.json"), json.writeValueAsString(cfg));
    int[] prompt = GoldenFixture.load(RepoPaths.require(fixture)).promptIds();
    try (CausalLm a = CausalLm.load(sparse);
        CausalLm b = CausalLm.load(dense)) {
      int topK = a.config().sparseAttention().topK();
      assertThat(prompt.length).isGreaterThan(topK);
      int h = a.config().hiddenSize();
      float[] hidden = new float[prompt.length * h];
      for (int i = 0; i < hidden.length; i++) {
        hidden[i] = (float) Math.sin(i * 0.11);
      }
      NextnLayer ma = a.nextnLayer().orElseThrow();
      NextnLayer mb = b.nextnLayer().orElseThrow();
      KvCache ca = ma.newCache();
      // Rows within the top-k: every position is kept either way.
      float[] shortA =
          ma.forward(Arrays.copyOf(prompt, topK), Arrays.copyOf(hidden, topK * h), ca).logits();
      float[] shortB =
          mb.forward(Arrays.copyOf(prompt, topK), Arrays.copyOf(hidden, topK * h), mb.newCache())
              .logits();
      assertThat(shortA).containsExactly(shortB);
      assertThat(ca.widthC()).isEqualTo(a.config().sparseAttention().indexHeadDim());
      assertThat(ca.c(0)).hasSizeGreaterThanOrEqualTo(topK * ca.widthC());
      float[] longA = ma.forward(prompt, hidden, ma.newCache()).logits();
      float[] longB = mb.forward(prompt, hidden, mb.newCache()).logits();
      assertThat(longA)
          .as("sparse and dense MTP attention differ past index_topk")
          .isNotEqualTo(longB);
    }
  }

  @Test
  void sampledNextnRepeatsWithTheSameSeed() throws Exception {
    try (CausalLm lm =
        CausalLm.load(withMtp("fixtures/golden/qwen3_moe_basic", "qwen3_moe_basic"))) {
      int[] prompt =
          GoldenFixture.load(RepoPaths.require("fixtures/golden/qwen3_moe_basic")).promptIds();
      SpeculativeGenerator gen =
          new SpeculativeGenerator(lm, SpeculativeConfig.of(SpeculativeAlgorithm.NEXTN, 3), null);
      SamplingParams p5 = new SamplingParams(0.8, 0.95, 0, 5, 30, true, List.of());
      SamplingParams p6 = new SamplingParams(0.8, 0.95, 0, 6, 30, true, List.of());
      int[] first = gen.generate(prompt, p5, new int[0], t -> true).generation().outputIds();
      assertThat(first).hasSize(30);
      assertThat(gen.generate(prompt, p5, new int[0], t -> true).generation().outputIds())
          .containsExactly(first);
      assertThat(gen.generate(prompt, p6, new int[0], t -> true).generation().outputIds())
          .isNotEqualTo(first);
    }
  }

  @Test
  void mtpCacheAfterARejectedChainEqualsAFreshDrafterFedTheSameHistory() throws Exception {
    try (CausalLm lm = CausalLm.load(withMtp("fixtures/golden/deepseek_v3_basic", "v3"))) {
      NextnLayer layer = lm.nextnLayer().orElseThrow();
      int h = lm.config().hiddenSize();
      RowDistribution greedy =
          RowDistribution.of(SamplingParams.greedy(8), lm.config().vocabSize());
      int[] context = {5, 9, 11, 2, 7, 30, 31, 32, 33};
      // Target hidden states of positions 0..7 (any values serve: the layer is only fed them).
      float[] hidden = new float[8 * h];
      for (int i = 0; i < hidden.length; i++) {
        hidden[i] = (float) Math.sin(i * 0.37);
      }
      HiddenStateDrafter spec = new HiddenStateDrafter(layer, greedy);
      spec.observeHidden(0, hidden, 0, 5);
      Draft first = spec.propose(context, 6, 4); // rows 0..4, then 3 chained rows
      assertThat(first.length()).isEqualTo(4);
      assertThat(spec.cache().length()).isEqualTo(5 + 3);
      // The verify kept 2 rows (positions 5, 6); the chained rows must drop out.
      spec.observeHidden(5, hidden, 5, 2);
      Draft second = spec.propose(context, 8, 1);

      HiddenStateDrafter fresh = new HiddenStateDrafter(layer, greedy);
      fresh.observeHidden(0, hidden, 0, 7);
      Draft expected = fresh.propose(context, 8, 1);

      assertThat(second.tokens()).containsExactly(expected.tokens());
      KvCache a = spec.cache();
      KvCache b = fresh.cache();
      assertThat(a.length()).isEqualTo(7).isEqualTo(b.length());
      for (int i = 0; i < 7 * a.widthA(); i++) {
        assertThat(Math.abs(a.a(0)[i] - b.a(0)[i])).isLessThanOrEqualTo(1e-5f);
      }
      for (int i = 0; i < 7 * a.widthB(); i++) {
        assertThat(Math.abs(a.b(0)[i] - b.b(0)[i])).isLessThanOrEqualTo(1e-5f);
      }
      spec.close();
      fresh.close();
    }
  }

  @Test
  void aModelWithoutMtpLayersIsRefused() {
    try (CausalLm lm = CausalLm.load(RepoPaths.require("fixtures/golden/deepseek_v3_basic"))) {
      assertThat(lm.nextnLayer()).isEmpty();
      assertThatThrownBy(
              () ->
                  new SpeculativeGenerator(
                      lm, SpeculativeConfig.of(SpeculativeAlgorithm.parse("mtp"), 2), null))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("num_nextn_predict_layers 0");
    }
  }

  @Test
  void mtpIsAnotherNameForNextn() {
    assertThat(SpeculativeAlgorithm.parse("MTP")).isEqualTo(SpeculativeAlgorithm.NEXTN);
    assertThat(SpeculativeAlgorithm.parse("nextn")).isEqualTo(SpeculativeAlgorithm.NEXTN);
    assertThat(Arrays.asList(SpeculativeAlgorithm.values())).contains(SpeculativeAlgorithm.NEXTN);
  }
}
