package dev.ringmaster.model.eagle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ringmaster.model.ModelLoadException;
import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.model.config.RopeConfig;
import dev.ringmaster.runtime.HiddenCapture;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * An EAGLE-3 head's {@code config.json} ({@code LlamaForCausalLMEagle3}): one Llama decoder layer
 * whose attention reads {@code cat(input_layernorm(embed), hidden_norm(h))}, so its q/k/v
 * projections are {@code 2 * hidden_size} wide, after {@code fc} folds three target layers' hidden
 * states ({@code 3 * hidden_size}) into one; its own LM head over {@code draft_vocab_size} tokens.
 *
 * @param source the file it was read from (for messages)
 * @param hiddenSize the head's width, which must equal the target's (it shares the embedding)
 * @param intermediateSize the SwiGLU MLP's width
 * @param numHeads query heads
 * @param numKvHeads key/value heads
 * @param headDim head size
 * @param rmsNormEps epsilon of every RMSNorm
 * @param rope the rotary embedding (halves layout, as Llama)
 * @param vocabSize the target's vocabulary size
 * @param draftVocabSize tokens of the head's own LM head ({@code draft_vocab_size}; the target's
 *     vocabulary when absent)
 * @param fcBias whether {@code fc} has a bias ({@code bias})
 * @param auxLayerIds {@code eagle_config.eagle_aux_hidden_state_layer_ids}: the target layers whose
 *     outputs the head reads, or null for SGLang's default
 */
public record Eagle3HeadConfig(
    String source,
    int hiddenSize,
    int intermediateSize,
    int numHeads,
    int numKvHeads,
    int headDim,
    double rmsNormEps,
    RopeConfig rope,
    int vocabSize,
    int draftVocabSize,
    boolean fcBias,
    List<Integer> auxLayerIds) {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** The architecture name in {@code config.json}. */
  public static final String ARCHITECTURE = "LlamaForCausalLMEagle3";

  /**
   * Reads {@code config.json} in an EAGLE-3 head directory.
   *
   * @throws ModelLoadException when it is missing, not JSON, not an EAGLE-3 head, or a field is out
   *     of range
   */
  public static Eagle3HeadConfig parse(Path dir) {
    Path file = dir.resolve("config.json");
    JsonNode root;
    try {
      root = JSON.readTree(Files.readString(file));
    } catch (NoSuchFileException e) {
      throw new ModelLoadException(
          file + ": not found. An EAGLE-3 head directory needs config.json and model.safetensors.");
    } catch (IOException e) {
      throw new ModelLoadException(file + ": not valid JSON (" + e.getMessage() + ")", e);
    }
    if (root == null || !root.isObject()) {
      throw new ModelLoadException(file + ": expected a JSON object");
    }
    return of(root, file.toString());
  }

  /** Reads a parsed {@code config.json}; {@code source} names it in messages. */
  public static Eagle3HeadConfig of(JsonNode root, String source) {
    String arch = root.path("architectures").path(0).asText("");
    if (!arch.equals(ARCHITECTURE)) {
      throw new ModelLoadException(
          source
              + ": architectures is '"
              + arch
              + "', expected "
              + ARCHITECTURE
              + " (an EAGLE-3 head; --speculative-draft-model-path names the head's directory)");
    }
    int layers = root.path("num_hidden_layers").asInt(1);
    if (layers != 1) {
      throw new ModelLoadException(
          source + ": num_hidden_layers is " + layers + "; EAGLE-3 heads with one layer run here");
    }
    String act = root.path("hidden_act").asText("silu");
    if (!act.equals("silu")) {
      throw new ModelLoadException(source + ": hidden_act '" + act + "' is not supported (silu)");
    }
    int hidden = positive(root, "hidden_size", source);
    int heads = positive(root, "num_attention_heads", source);
    int kvHeads = root.path("num_key_value_heads").asInt(heads);
    int headDim = root.path("head_dim").asInt(hidden / heads);
    if (kvHeads < 1 || heads % kvHeads != 0) {
      throw new ModelLoadException(
          source
              + ": num_key_value_heads "
              + kvHeads
              + " must divide num_attention_heads "
              + heads);
    }
    if (headDim < 2 || headDim % 2 != 0) {
      throw new ModelLoadException(source + ": head_dim must be even and >= 2, got " + headDim);
    }
    int vocab = positive(root, "vocab_size", source);
    JsonNode dv = root.path("draft_vocab_size");
    int draftVocab = dv.isNumber() ? dv.asInt() : vocab;
    if (draftVocab < 1 || draftVocab > vocab) {
      throw new ModelLoadException(
          source
              + ": draft_vocab_size "
              + draftVocab
              + " must be between 1 and vocab_size "
              + vocab);
    }
    if (root.path("target_hidden_size").isNumber()
        && root.get("target_hidden_size").asInt() != hidden) {
      throw new ModelLoadException(
          source
              + ": target_hidden_size "
              + root.get("target_hidden_size").asInt()
              + " differs from hidden_size "
              + hidden
              + "; heads as wide as their target run here (they share its embedding)");
    }
    List<Integer> aux = null;
    JsonNode ids = root.path("eagle_config").path("eagle_aux_hidden_state_layer_ids");
    if (!ids.isMissingNode() && !ids.isNull()) {
      if (!ids.isArray() || ids.size() != 3) {
        throw new ModelLoadException(
            source + ": eagle_config.eagle_aux_hidden_state_layer_ids must list 3 layer ids");
      }
      aux = new ArrayList<>();
      for (JsonNode id : ids) {
        if (!id.canConvertToInt() || id.asInt() < 0) {
          throw new ModelLoadException(
              source + ": eagle_aux_hidden_state_layer_ids holds '" + id + "', not a layer id");
        }
        aux.add(id.asInt());
      }
    }
    return new Eagle3HeadConfig(
        source,
        hidden,
        positive(root, "intermediate_size", source),
        heads,
        kvHeads,
        headDim,
        root.path("rms_norm_eps").asDouble(1e-6),
        rope(root, source),
        vocab,
        draftVocab,
        root.path("bias").asBoolean(false),
        aux == null ? null : List.copyOf(aux));
  }

  /**
   * The target's hidden states this head reads: the outputs of {@code
   * eagle_aux_hidden_state_layer_ids} (the inputs of the layers after them), or SGLang's default,
   * the inputs of layers {@code [2, L / 2, L - 3]} of a target of {@code L} layers.
   *
   * @throws IllegalArgumentException when a layer is outside the target
   */
  public HiddenCapture captureFor(int targetLayers) {
    int[] inputs;
    if (auxLayerIds != null) {
      inputs = auxLayerIds.stream().mapToInt(id -> id + 1).toArray();
    } else {
      inputs = new int[] {2, targetLayers / 2, targetLayers - 3};
      if (targetLayers < 3) {
        throw new IllegalArgumentException(
            source
                + ": the target has "
                + targetLayers
                + " layers, too few for the default capture [2, L/2, L-3]; set"
                + " eagle_config.eagle_aux_hidden_state_layer_ids");
      }
    }
    for (int l : inputs) {
      if (l > targetLayers) {
        throw new IllegalArgumentException(
            source
                + ": eagle_aux_hidden_state_layer_ids names layer "
                + (l - 1)
                + " but the target has layers 0.."
                + (targetLayers - 1));
      }
    }
    return HiddenCapture.ofLayerInputs(inputs);
  }

  /**
   * Checks the head against its target.
   *
   * @throws IllegalArgumentException naming the field that does not match
   */
  public void checkAgainst(ModelConfig target) {
    if (hiddenSize != target.hiddenSize()) {
      throw new IllegalArgumentException(
          source
              + ": hidden_size "
              + hiddenSize
              + " differs from the target's "
              + target.hiddenSize()
              + ": this head was trained for another model");
    }
    if (vocabSize != target.vocabSize()) {
      throw new IllegalArgumentException(
          source
              + ": vocab_size "
              + vocabSize
              + " differs from the target's "
              + target.vocabSize()
              + ": this head was trained for another model");
    }
    captureFor(target.numLayers());
  }

  private static int positive(JsonNode root, String key, String source) {
    JsonNode v = root.path(key);
    if (!v.canConvertToInt() || v.asInt() < 1) {
      throw new ModelLoadException(
          source
              + ": "
              + key
              + " must be a positive integer, got "
              + (v.isMissingNode() ? "nothing" : v));
    }
    return v.asInt();
  }

  private static RopeConfig rope(JsonNode root, String source) {
    JsonNode params = root.path("rope_parameters");
    if (!params.isObject()) {
      params = root.path("rope_scaling");
    }
    double theta =
        params.path("rope_theta").isNumber()
            ? params.get("rope_theta").asDouble()
            : root.path("rope_theta").asDouble(10000.0);
    String type =
        params.isObject()
            ? params.path("rope_type").asText(params.path("type").asText("default"))
            : "default";
    if (!type.equals("default") && !type.equals("linear")) {
      throw new ModelLoadException(
          source
              + ": rope type '"
              + type
              + "' is not supported for EAGLE-3 heads (default, linear)");
    }
    return new RopeConfig(
        theta,
        type,
        params.path("factor").asDouble(1.0),
        root.path("max_position_embeddings").asInt(4096),
        32,
        1,
        0,
        0,
        Double.NaN,
        true,
        false);
  }
}
