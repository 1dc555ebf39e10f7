package dev.ringmaster.sim.model;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ringmaster.model.ModelLoadException;
import dev.ringmaster.model.config.Architecture;
import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.model.config.ModelConfigParser;
import dev.ringmaster.model.config.MoeConfig;
import dev.ringmaster.sim.model.ModelShape.AttentionShape;
import dev.ringmaster.sim.model.ModelShape.IndexerShape;
import dev.ringmaster.sim.model.ModelShape.MoeShape;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Reads a config.json into a {@link ModelShape}. The families the engine runs (deepseek_v2,
 * deepseek_v3, qwen3_moe) go through the engine's own {@link ModelConfigParser}; GLM-5 ({@code
 * glm_moe_dsa}) and dense Llama-style models, which the simulator only predicts, are read here with
 * the defaults of their transformers 5.18 configuration classes.
 */
public final class ModelShapes {
  private static final ObjectMapper JSON = new ObjectMapper();

  private ModelShapes() {}

  /** Reads {@code config.json} (or a model directory holding one). */
  public static ModelShape load(Path configJsonOrDir) {
    Path file =
        Files.isDirectory(configJsonOrDir)
            ? configJsonOrDir.resolve("config.json")
            : configJsonOrDir;
    String text;
    try {
      text = Files.readString(file);
    } catch (IOException e) {
      throw new ModelLoadException(file + ": cannot read (" + e.getMessage() + ")", e);
    }
    return parse(text, file.toString());
  }

  /** Parses config.json text. */
  public static ModelShape parse(String json, String source) {
    JsonNode root;
    try {
      root = JSON.readTree(json);
    } catch (IOException e) {
      throw new ModelLoadException(source + ": not valid JSON (" + e.getMessage() + ")", e);
    }
    String type = root.path("model_type").asText("");
    return switch (type) {
      case "glm_moe_dsa" -> withEngineConfig(glmMoeDsa(root), json, source);
      case "llama", "mistral", "qwen2" -> denseLlama(root, type);
      default -> {
        if (Architecture.fromModelType(type) == null) {
          throw new ModelLoadException(
              source
                  + ": model_type '"
                  + type
                  + "' is not supported by the simulator (supported: "
                  + Architecture.supportedList()
                  + ", glm_moe_dsa, llama, mistral, qwen2)");
        }
        yield fromEngineConfig(ModelConfigParser.parseString(json, source));
      }
    };
  }

  /**
   * The shape with the engine's parse of the same config attached when the engine reads it, so the
   * weights come from the engine's loader; as it is when the engine refuses the config.
   */
  private static ModelShape withEngineConfig(ModelShape shape, String json, String source) {
    ModelConfig c;
    try {
      c = ModelConfigParser.parseString(json, source);
    } catch (RuntimeException notForTheEngine) {
      return shape;
    }
    return new ModelShape(
        shape.modelType(),
        shape.vocabSize(),
        shape.hiddenSize(),
        shape.denseIntermediateSize(),
        shape.numLayers(),
        shape.attention(),
        shape.moe(),
        shape.moeLayers(),
        shape.indexer(),
        shape.tieWordEmbeddings(),
        shape.numMtpLayers(),
        c);
  }

  /** Converts the engine's normalised config. */
  public static ModelShape fromEngineConfig(ModelConfig c) {
    boolean mla = c.architecture().usesMla();
    AttentionShape att =
        new AttentionShape(
            mla ? AttentionKind.MLA : AttentionKind.GQA,
            c.numHeads(),
            c.numKvHeads(),
            c.headDim(),
            c.qLoraRank(),
            c.kvLoraRank(),
            c.qkNopeHeadDim(),
            c.qkRopeHeadDim(),
            c.vHeadDim(),
            c.architecture() == Architecture.QWEN3_MOE);
    MoeConfig m = c.moe();
    MoeShape moe =
        m == null
            ? null
            : new MoeShape(
                m.numExperts(),
                m.topK(),
                m.expertIntermediateSize(),
                m.sharedIntermediateSize(),
                m.hasScoreCorrectionBias());
    return new ModelShape(
        c.architecture().modelType(),
        c.vocabSize(),
        c.hiddenSize(),
        c.intermediateSize(),
        c.numLayers(),
        att,
        moe,
        c.moeLayers(),
        c.sparseAttention() == null
            ? null
            : new IndexerShape(
                c.sparseAttention().indexHeads(),
                c.sparseAttention().indexHeadDim(),
                c.sparseAttention().topK(),
                c.sparseAttention().fullLayers()),
        c.tieWordEmbeddings(),
        c.numNextnPredictLayers(),
        c);
  }

  // Defaults from transformers 5.18 GlmMoeDsaConfig (configuration_glm_moe_dsa.py).
  private static ModelShape glmMoeDsa(JsonNode r) {
    int layers = intOr(r, "num_hidden_layers", 78);
    int heads = intOr(r, "num_attention_heads", 64);
    AttentionShape att =
        new AttentionShape(
            AttentionKind.MLA,
            heads,
            heads,
            0,
            intOr(r, "q_lora_rank", 2048),
            intOr(r, "kv_lora_rank", 512),
            intOr(r, "qk_nope_head_dim", 192),
            intOr(r, "qk_rope_head_dim", 64),
            intOr(r, "v_head_dim", 256),
            false);
    int experts = r.hasNonNull("n_routed_experts") ? r.get("n_routed_experts").asInt() : 256;
    if (r.hasNonNull("num_experts")) {
      experts = r.get("num_experts").asInt();
    }
    int expertInter = intOr(r, "moe_intermediate_size", 2048);
    MoeShape moe =
        new MoeShape(
            experts,
            intOr(r, "num_experts_per_tok", 8),
            expertInter,
            expertInter * intOr(r, "n_shared_experts", 1),
            true);
    List<Boolean> moeLayers = new ArrayList<>();
    JsonNode types = r.path("mlp_layer_types");
    int firstDense = Math.min(intOr(r, "first_k_dense_replace", 3), layers);
    for (int i = 0; i < layers; i++) {
      moeLayers.add(types.isArray() ? "sparse".equals(types.get(i).asText()) : i >= firstDense);
    }
    List<Boolean> full = new ArrayList<>();
    JsonNode itypes = r.path("indexer_types");
    JsonNode pattern = r.path("index_topk_pattern");
    int freq = Math.max(intOr(r, "index_topk_freq", 1), 1);
    int offset = intOr(r, "index_skip_topk_offset", 2);
    for (int i = 0; i < layers; i++) {
      if (itypes.isArray()) {
        full.add("full".equals(itypes.get(i).asText()));
      } else if (pattern.isTextual()) {
        full.add(pattern.asText().charAt(i) == 'F');
      } else {
        full.add(Math.max(i - offset + 1, 0) % freq == 0);
      }
    }
    IndexerShape idx =
        new IndexerShape(
            intOr(r, "index_n_heads", 32),
            intOr(r, "index_head_dim", 128),
            intOr(r, "index_topk", 2048),
            List.copyOf(full));
    return new ModelShape(
        "glm_moe_dsa",
        intOr(r, "vocab_size", 154880),
        intOr(r, "hidden_size", 6144),
        intOr(r, "intermediate_size", 12288),
        layers,
        att,
        moe,
        List.copyOf(moeLayers),
        idx,
        boolOr(r, "tie_word_embeddings", false),
        intOr(r, "num_nextn_predict_layers", 0));
  }

  private static ModelShape denseLlama(JsonNode r, String type) {
    int hidden = required(r, "hidden_size");
    int heads = required(r, "num_attention_heads");
    int layers = required(r, "num_hidden_layers");
    int headDim = intOr(r, "head_dim", hidden / heads);
    AttentionShape att =
        new AttentionShape(
            AttentionKind.GQA,
            heads,
            intOr(r, "num_key_value_heads", heads),
            headDim,
            0,
            0,
            0,
            0,
            0,
            false);
    List<Boolean> none = new ArrayList<>();
    for (int i = 0; i < layers; i++) {
      none.add(false);
    }
    return new ModelShape(
        type,
        required(r, "vocab_size"),
        hidden,
        required(r, "intermediate_size"),
        layers,
        att,
        null,
        List.copyOf(none),
        null,
        boolOr(r, "tie_word_embeddings", false),
        0);
  }

  private static int required(JsonNode r, String key) {
    if (!r.hasNonNull(key)) {
      throw new ModelLoadException("config.json: required field '" + key + "' is missing");
    }
    return r.get(key).asInt();
  }

  private static int intOr(JsonNode r, String key, int def) {
    return r.hasNonNull(key) ? r.get(key).asInt() : def;
  }

  private static boolean boolOr(JsonNode r, String key, boolean def) {
    return r.hasNonNull(key) ? r.get(key).asBoolean() : def;
  }
}
