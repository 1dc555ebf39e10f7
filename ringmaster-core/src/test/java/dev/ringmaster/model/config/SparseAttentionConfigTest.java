package dev.ringmaster.model.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringmaster.model.ModelLoadException;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;

/** deepseek_v32 and glm_moe_dsa: the indexer fields, their defaults and the per-layer modes. */
class SparseAttentionConfigTest {
  private static String config(String modelType, String extra) {
    return "{\"model_type\": \""
        + modelType
        + "\", \"vocab_size\": 100, \"hidden_size\": 64, \"intermediate_size\": 96,"
        + " \"moe_intermediate_size\": 16, \"num_hidden_layers\": 4, \"num_attention_heads\": 4,"
        + " \"n_routed_experts\": 8, \"num_experts_per_tok\": 2, \"kv_lora_rank\": 16,"
        + " \"q_lora_rank\": 24, \"qk_rope_head_dim\": 8, \"qk_nope_head_dim\": 8,"
        + " \"v_head_dim\": 8"
        + extra
        + "}";
  }

  private static ModelConfig parse(String modelType, String extra) {
    return ModelConfigParser.parseString(config(modelType, extra), "t");
  }

  @Test
  void glm5DefaultsFollowGlmMoeDsaConfig() {
    ModelConfig c = parse("glm_moe_dsa", "");
    SparseAttentionConfig s = c.sparseAttention();
    assertThat(c.architecture()).isEqualTo(Architecture.GLM_MOE_DSA);
    assertThat(s.indexHeads()).isEqualTo(32);
    assertThat(s.indexHeadDim()).isEqualTo(128);
    assertThat(s.topK()).isEqualTo(2048);
    assertThat(s.ropeInterleaved()).isTrue();
    assertThat(s.fullLayers()).containsExactly(true, true, true, true);
    assertThat(c.moeLayers()).containsExactly(false, false, false, true);
    assertThat(c.moe().numGroups()).isEqualTo(1);
    assertThat(c.rope().interleaved()).isTrue();
    assertThat(c.indexerValuesPerToken()).isEqualTo(4 * 128);
  }

  @Test
  void deepseekV32DefaultsFollowDeepseekV32Config() {
    ModelConfig c = parse("deepseek_v32", ", \"index_topk\": 64");
    SparseAttentionConfig s = c.sparseAttention();
    assertThat(s.indexHeads()).isEqualTo(64);
    assertThat(s.topK()).isEqualTo(64);
    assertThat(s.ropeInterleaved()).isFalse();
    assertThat(c.rope().interleaved()).isTrue();
    assertThat(c.moe().numGroups()).isEqualTo(8);
    assertThat(c.moe().topKGroups()).isEqualTo(4);
  }

  @Test
  void mlpLayerTypesOverrideFirstKDenseReplace() {
    ModelConfig c =
        parse(
            "deepseek_v32",
            ", \"n_group\": 1, \"topk_group\": 1,"
                + " \"mlp_layer_types\": [\"sparse\", \"dense\", \"sparse\", \"sparse\"]");
    assertThat(c.moeLayers()).containsExactly(true, false, true, true);
  }

  @Test
  void indexerTypesPatternAndFrequencyChooseTheSharedLayers() {
    assertThat(
            parse(
                    "glm_moe_dsa",
                    ", \"indexer_types\": [\"full\", \"shared\", \"shared\", \"full\"]")
                .sparseAttention()
                .fullLayers())
        .containsExactly(true, false, false, true);
    assertThat(
            parse("glm_moe_dsa", ", \"index_topk_pattern\": \"FSFS\"")
                .sparseAttention()
                .fullLayers())
        .containsExactly(true, false, true, false);
    assertThat(
            parse(
                    "glm_moe_dsa",
                    ", \"index_topk_pattern\": [\"full\", \"full\", \"shared\", \"full\"]")
                .sparseAttention()
                .fullLayers())
        .containsExactly(true, true, false, true);
    // GlmMoeDsaConfig: full where max(i - offset + 1, 0) % freq == 0.
    List<Boolean> byFreq =
        parse("glm_moe_dsa", ", \"index_topk_freq\": 2, \"index_skip_topk_offset\": 2")
            .sparseAttention()
            .fullLayers();
    assertThat(byFreq).containsExactly(true, true, false, true);
    assertThat(
            parse("glm_moe_dsa", ", \"indexer_types\": [\"full\", \"shared\", \"full\", \"full\"]")
                .indexerValuesPerToken())
        .isEqualTo(3 * 128);
  }

  @Test
  void badIndexerSettingsAreNamed() {
    assertThatThrownBy(() -> parse("glm_moe_dsa", ", \"indexer_types\": [\"full\", \"shared\"]"))
        .isInstanceOf(ModelLoadException.class)
        .hasMessageContaining("indexer_types must list one of full / shared for each of the 4");
    assertThatThrownBy(
            () ->
                parse(
                    "glm_moe_dsa",
                    ", \"indexer_types\": [\"shared\", \"full\", \"full\", \"full\"]"))
        .hasMessageContaining("layer 0 must run its own indexer");
    assertThatThrownBy(() -> parse("glm_moe_dsa", ", \"index_topk_pattern\": \"FX\""))
        .hasMessageContaining("index_topk_pattern");
    assertThatThrownBy(() -> parse("deepseek_v32", ", \"index_head_dim\": 4"))
        .hasMessageContaining("index_head_dim (4) must be at least qk_rope_head_dim (8)");
    assertThatThrownBy(() -> parse("deepseek_v32", ", \"index_topk\": 0"))
        .hasMessageContaining("index_topk");
    String noLora =
        config("deepseek_v32", "").replace("\"q_lora_rank\": 24", "\"q_lora_rank\": null");
    assertThatThrownBy(() -> ModelConfigParser.parseString(noLora, "t"))
        .hasMessageContaining("needs q_lora_rank");
  }

  @Test
  void denseFamiliesHaveNoIndexer() {
    ModelConfig c = parse("deepseek_v3", ", \"n_group\": 1, \"topk_group\": 1");
    assertThat(c.sparseAttention()).isNull();
    assertThat(c.indexerValuesPerToken()).isZero();
    assertThat(Collections.frequency(c.moeLayers(), true)).isEqualTo(4);
  }
}
