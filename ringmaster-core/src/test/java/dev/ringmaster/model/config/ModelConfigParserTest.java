package dev.ringmaster.model.config;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** Both rope spellings, aliases of the expert count, and the layer kinds of each family. */
class ModelConfigParserTest {
  private static final String V3_BASE =
      """
      "model_type": "deepseek_v3", "vocab_size": 100, "hidden_size": 64, "intermediate_size": 96,
      "moe_intermediate_size": 16, "num_hidden_layers": 4, "num_attention_heads": 4,
      "n_routed_experts": 8, "num_experts_per_tok": 2, "n_group": 2, "topk_group": 1,
      "first_k_dense_replace": 1, "kv_lora_rank": 16, "q_lora_rank": null,
      "qk_rope_head_dim": 8, "qk_nope_head_dim": 8, "v_head_dim": 8
      """;

  @Test
  void oldRopeScalingSpellingWithTopLevelTheta() {
    ModelConfig c =
        ModelConfigParser.parseString(
            "{"
                + V3_BASE
                + ", \"rope_theta\": 50000, \"rope_scaling\": {\"type\": \"yarn\", \"factor\": 4,"
                + " \"original_max_position_embeddings\": 64, \"mscale\": 1,"
                + " \"mscale_all_dim\": 1}}",
            "t");
    assertThat(c.rope().type()).isEqualTo("yarn");
    assertThat(c.rope().theta()).isEqualTo(50000);
    assertThat(c.rope().factor()).isEqualTo(4);
    assertThat(c.rope().originalMaxPositionEmbeddings()).isEqualTo(64);
    assertThat(c.qLoraRank()).isZero();
  }

  @Test
  void transformers5RopeParametersSpelling() {
    ModelConfig c =
        ModelConfigParser.parseString(
            "{"
                + V3_BASE
                + ", \"rope_parameters\": {\"rope_type\": \"yarn\", \"rope_theta\": 1000,"
                + " \"factor\": 2, \"original_max_position_embeddings\": 32}}",
            "t");
    assertThat(c.rope().theta()).isEqualTo(1000);
    assertThat(c.rope().isYarn()).isTrue();
    assertThat(c.rope().interleaved()).isTrue();
    assertThat(c.moeLayers()).containsExactly(false, true, true, true);
    assertThat(c.moe().selection()).isEqualTo(MoeConfig.Selection.NOAUX_TC);
    assertThat(c.moe().routedScalingFactor()).isEqualTo(2.5);
  }

  @Test
  void qwenExpertCountAliasesAndSparseStep() {
    String base =
        """
        {"model_type": "qwen3_moe", "vocab_size": 100, "hidden_size": 64, "intermediate_size": 96,
         "moe_intermediate_size": 16, "num_hidden_layers": 4, "num_attention_heads": 4,
         "num_key_value_heads": 2, "num_experts_per_tok": 2, "decoder_sparse_step": 2,
         "mlp_only_layers": [3], "%s": 8}
        """;
    for (String key : new String[] {"num_experts", "num_local_experts"}) {
      ModelConfig c = ModelConfigParser.parseString(base.formatted(key), "t");
      assertThat(c.moe().numExperts()).isEqualTo(8);
      assertThat(c.moeLayers()).containsExactly(false, true, false, false);
      assertThat(c.headDim()).isEqualTo(16);
      assertThat(c.kvValuesPerTokenPerLayer()).isEqualTo(2 * 2 * 16);
    }
  }

  @Test
  void mlaKvValuesPerTokenAreTheLatentPlusTheRopeKey() {
    ModelConfig c = ModelConfigParser.parseString("{" + V3_BASE + "}", "t");
    assertThat(c.kvValuesPerTokenPerLayer()).isEqualTo(16 + 8);
  }
}
