package dev.ringmaster.model.config;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ringmaster.model.ModelLoadException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.logging.Logger;

/**
 * Reads a Hugging Face {@code config.json} into a {@link ModelConfig}, applying the defaults of the
 * transformers 5 configuration classes and accepting both rope spellings.
 */
public final class ModelConfigParser {
  private static final Logger LOG = Logger.getLogger(ModelConfigParser.class.getName());
  private static final ObjectMapper JSON = new ObjectMapper();

  private final JsonNode root;
  private final String source;
  private final Path hfQuantConfig;

  private ModelConfigParser(JsonNode root, String source, Path hfQuantConfig) {
    this.root = root;
    this.source = source;
    this.hfQuantConfig = hfQuantConfig;
  }

  /** Parses {@code config.json} in a model directory (or the file itself). */
  public static ModelConfig parse(Path configJsonOrDir) {
    Path file =
        Files.isDirectory(configJsonOrDir)
            ? configJsonOrDir.resolve("config.json")
            : configJsonOrDir;
    JsonNode root;
    try {
      root = JSON.readTree(Files.readString(file));
    } catch (NoSuchFileException e) {
      throw new ModelLoadException(
          file
              + ": not found. A model directory needs config.json, model.safetensors (or"
              + " model.safetensors.index.json) and tokenizer.json.");
    } catch (IOException e) {
      throw new ModelLoadException(file + ": not valid JSON (" + e.getMessage() + ")", e);
    }
    if (root == null || !root.isObject()) {
      throw new ModelLoadException(file + ": expected a JSON object");
    }
    Path parent = file.toAbsolutePath().getParent();
    Path hfQuant = parent == null ? null : parent.resolve("hf_quant_config.json");
    return new ModelConfigParser(root, file.toString(), hfQuant).build();
  }

  /** Parses config.json text (for tests and generated configs). */
  public static ModelConfig parseString(String json, String sourceName) {
    try {
      return new ModelConfigParser(JSON.readTree(json), sourceName, null).build();
    } catch (IOException e) {
      throw new ModelLoadException(sourceName + ": not valid JSON (" + e.getMessage() + ")", e);
    }
  }

  private ModelConfig build() {
    String modelType = root.path("model_type").asText("");
    Architecture arch = Architecture.fromModelType(modelType);
    if (arch == null) {
      throw new ModelLoadException(
          source
              + ": model_type '"
              + modelType
              + "' is not supported (supported: "
              + Architecture.supportedList()
              + ")");
    }
    int hidden = requireInt("hidden_size");
    int layers = requireInt("num_hidden_layers");
    int heads = requireInt("num_attention_heads");
    int vocab = requireInt("vocab_size");
    int intermediate = requireInt("intermediate_size");
    double eps = optDouble("rms_norm_eps", 1e-6);
    boolean tie = optBool("tie_word_embeddings", false);
    int maxPos = optInt("max_position_embeddings", arch == Architecture.QWEN3_MOE ? 32768 : 4096);
    boolean attnBias = optBool("attention_bias", false);
    int kvHeads = optInt("num_key_value_heads", heads);
    int headDim = 0;
    int qLora = 0;
    int kvLora = 0;
    int nope = 0;
    int ropeDims = 0;
    int vDim = 0;
    if (arch.usesMla()) {
      kvHeads = heads;
      // An explicit null means "no query LoRA"; an absent field takes the class default.
      qLora = root.has("q_lora_rank") ? optInt("q_lora_rank", 0) : 1536;
      kvLora = optInt("kv_lora_rank", 512);
      nope = optInt("qk_nope_head_dim", 128);
      ropeDims = optInt("qk_rope_head_dim", 64);
      vDim = optInt("v_head_dim", 128);
    } else {
      headDim = optInt("head_dim", hidden / heads);
    }
    RopeConfig rope = parseRope(arch);
    MoeConfig moe = parseMoe(arch, hidden);
    List<Boolean> moeLayers = moeLayers(arch, layers, moe);
    int mtp = optInt("num_nextn_predict_layers", 0);
    SparseAttentionConfig sparse = arch.usesSparseAttention() ? parseSparse(arch, layers) : null;
    if (sparse != null && qLora <= 0) {
      throw new ModelLoadException(
          source
              + ": "
              + modelType
              + " needs q_lora_rank (its indexer reads the query LoRA's normalised output)");
    }
    int bos = root.path("bos_token_id").isNumber() ? root.get("bos_token_id").asInt() : -1;
    List<Integer> eos = new ArrayList<>();
    JsonNode eosNode = root.path("eos_token_id");
    if (eosNode.isNumber()) {
      eos.add(eosNode.asInt());
    } else if (eosNode.isArray()) {
      eosNode.forEach(n -> eos.add(n.asInt()));
    }
    checkPositive("hidden_size", hidden);
    checkPositive("num_hidden_layers", layers);
    checkPositive("num_attention_heads", heads);
    checkPositive("vocab_size", vocab);
    if (kvHeads <= 0 || heads % kvHeads != 0) {
      throw new ModelLoadException(
          source
              + ": num_attention_heads ("
              + heads
              + ") must be a multiple of num_key_value_heads ("
              + kvHeads
              + ")");
    }
    return new ModelConfig(
        arch,
        vocab,
        hidden,
        intermediate,
        layers,
        heads,
        kvHeads,
        headDim,
        qLora,
        kvLora,
        nope,
        ropeDims,
        vDim,
        attnBias,
        eps,
        tie,
        maxPos,
        rope,
        moe,
        List.copyOf(moeLayers),
        mtp,
        bos,
        List.copyOf(eos),
        QuantizationConfigParser.parse(root, source, hfQuantConfig),
        sparse);
  }

  /**
   * The indexer's shape and, for GLM-5, which layers run it: {@code indexer_types} ("full" /
   * "shared"), else {@code index_topk_pattern} ("F"/"S" per layer), else every {@code
   * index_topk_freq}-th layer from {@code index_skip_topk_offset}, as GlmMoeDsaConfig derives it.
   */
  private SparseAttentionConfig parseSparse(Architecture arch, int layers) {
    int heads = optInt("index_n_heads", arch == Architecture.GLM_MOE_DSA ? 32 : 64);
    int headDim = optInt("index_head_dim", 128);
    int topK = optInt("index_topk", 2048);
    checkPositive("index_n_heads", heads);
    checkPositive("index_head_dim", headDim);
    checkPositive("index_topk", topK);
    int ropeDims = optInt("qk_rope_head_dim", 64);
    if (headDim < ropeDims) {
      throw new ModelLoadException(
          source
              + ": index_head_dim ("
              + headDim
              + ") must be at least qk_rope_head_dim ("
              + ropeDims
              + "): the indexer rotates its first qk_rope_head_dim dims");
    }
    List<Boolean> full = new ArrayList<>(layers);
    if (arch == Architecture.DEEPSEEK_V32) {
      for (int i = 0; i < layers; i++) {
        full.add(true);
      }
    } else if (root.path("indexer_types").isArray()) {
      strings("indexer_types", layers, "full", "shared").forEach(t -> full.add(t.equals("full")));
    } else if (root.path("index_topk_pattern").isArray()) {
      strings("index_topk_pattern", layers, "full", "shared")
          .forEach(t -> full.add(t.equals("full")));
    } else if (root.path("index_topk_pattern").isTextual()) {
      String pattern = root.get("index_topk_pattern").asText();
      if (pattern.length() != layers || !pattern.matches("[FS]*")) {
        throw new ModelLoadException(
            source
                + ": index_topk_pattern must have one letter F (full) or S (shared) per layer ("
                + layers
                + "), got '"
                + pattern
                + "'");
      }
      pattern.chars().forEach(c -> full.add(c == 'F'));
    } else {
      int freq = Math.max(optInt("index_topk_freq", 1), 1);
      int offset = optInt("index_skip_topk_offset", 2);
      for (int i = 0; i < layers; i++) {
        full.add(Math.max(i - offset + 1, 0) % freq == 0);
      }
    }
    if (!full.getFirst()) {
      throw new ModelLoadException(
          source
              + ": layer 0 must run its own indexer (indexer_types[0] = \"full\"): a shared layer"
              + " reuses the selection of an earlier full layer");
    }
    return new SparseAttentionConfig(
        heads,
        headDim,
        topK,
        arch == Architecture.GLM_MOE_DSA,
        List.copyOf(full),
        IndexerCacheDtype.AUTO);
  }

  /** The string array {@code key}, one entry per layer, each one of {@code allowed}. */
  private List<String> strings(String key, int layers, String... allowed) {
    JsonNode n = root.get(key);
    List<String> out = new ArrayList<>();
    Set<String> ok = Set.of(allowed);
    n.forEach(e -> out.add(e.asText("")));
    if (out.size() != layers || !ok.containsAll(out)) {
      throw new ModelLoadException(
          source
              + ": "
              + key
              + " must list one of "
              + String.join(" / ", allowed)
              + " for each of the "
              + layers
              + " layers, got "
              + n);
    }
    return out;
  }

  private RopeConfig parseRope(Architecture arch) {
    // transformers 5 writes rope_parameters (with rope_theta inside); older configs have
    // rope_scaling plus a top-level rope_theta. Either may be null.
    JsonNode params = root.path("rope_parameters");
    if (!params.isObject()) {
      params = root.path("rope_scaling");
    }
    double theta =
        params.path("rope_theta").isNumber()
            ? params.get("rope_theta").asDouble()
            : optDouble("rope_theta", 10000.0);
    String type = "default";
    if (params.isObject()) {
      type = params.path("rope_type").asText(params.path("type").asText("default"));
    }
    if (!type.equals("default") && !type.equals("yarn") && !type.equals("linear")) {
      throw new ModelLoadException(
          source
              + ": rope type '"
              + type
              + "' is not supported (supported: default, linear, yarn)");
    }
    double factor = params.path("factor").asDouble(1.0);
    int origMax =
        params.path("original_max_position_embeddings").isNumber()
            ? params.get("original_max_position_embeddings").asInt()
            : optInt("max_position_embeddings", 4096);
    boolean interleaved =
        switch (arch) {
          case DEEPSEEK_V2 -> true;
          case DEEPSEEK_V3 -> optBool("rope_interleave", true);
          // transformers 5.18 always rotates DSA models' MLA pairs interleaved (no
          // rope_interleave).
          case DEEPSEEK_V32, GLM_MOE_DSA -> true;
          case QWEN3_MOE -> false;
        };
    return new RopeConfig(
        theta,
        type,
        factor,
        origMax,
        params.path("beta_fast").asDouble(32.0),
        params.path("beta_slow").asDouble(1.0),
        params.path("mscale").asDouble(0.0),
        params.path("mscale_all_dim").asDouble(0.0),
        params.path("attention_factor").isNumber()
            ? params.get("attention_factor").asDouble()
            : Double.NaN,
        params.path("truncate").asBoolean(true),
        interleaved);
  }

  private MoeConfig parseMoe(Architecture arch, int hidden) {
    int experts = firstInt(0, "n_routed_experts", "num_experts", "num_local_experts");
    if (experts <= 0) {
      return null;
    }
    int topK = requireInt("num_experts_per_tok");
    int expertInter = requireInt("moe_intermediate_size");
    if (topK <= 0 || topK > experts) {
      throw new ModelLoadException(
          source
              + ": num_experts_per_tok ("
              + topK
              + ") must be between 1 and the number of experts ("
              + experts
              + ")");
    }
    return switch (arch) {
      case DEEPSEEK_V2 -> {
        String method = root.path("topk_method").asText("greedy");
        MoeConfig.Selection sel =
            switch (method) {
              case "greedy" -> MoeConfig.Selection.GREEDY;
              case "group_limited_greedy" -> MoeConfig.Selection.GROUP_LIMITED_GREEDY;
              default ->
                  throw new ModelLoadException(
                      source
                          + ": topk_method '"
                          + method
                          + "' is not supported for deepseek_v2 (greedy, group_limited_greedy)");
            };
        if (optBool("norm_topk_prob", false)) {
          // transformers 5's DeepseekV2 router never renormalises; we match it (the reference).
          LOG.warning(source + ": norm_topk_prob is ignored for deepseek_v2, as transformers does");
        }
        int groups = optInt("n_group", 1);
        checkGroups(experts, groups, optInt("topk_group", 1), sel != MoeConfig.Selection.GREEDY);
        yield new MoeConfig(
            experts,
            topK,
            expertInter,
            expertInter * optInt("n_shared_experts", 2),
            MoeConfig.Scoring.SOFTMAX,
            sel,
            groups,
            optInt("topk_group", 1),
            false,
            optDouble("routed_scaling_factor", 1.0),
            false);
      }
      case DEEPSEEK_V3, DEEPSEEK_V32, GLM_MOE_DSA -> {
        // DeepseekV32Config defaults to 8 groups with 4 kept; GlmMoeDsaConfig to one group.
        boolean v32 = arch == Architecture.DEEPSEEK_V32;
        int groups = optInt("n_group", v32 ? 8 : 1);
        int topkGroups = optInt("topk_group", v32 ? 4 : 1);
        checkGroups(experts, groups, topkGroups, true);
        yield new MoeConfig(
            experts,
            topK,
            expertInter,
            expertInter * optInt("n_shared_experts", 1),
            MoeConfig.Scoring.SIGMOID,
            MoeConfig.Selection.NOAUX_TC,
            groups,
            topkGroups,
            optBool("norm_topk_prob", true),
            optDouble("routed_scaling_factor", 2.5),
            true);
      }
      case QWEN3_MOE ->
          new MoeConfig(
              experts,
              topK,
              expertInter,
              0,
              MoeConfig.Scoring.SOFTMAX,
              MoeConfig.Selection.GREEDY,
              1,
              1,
              optBool("norm_topk_prob", false),
              1.0,
              false);
    };
  }

  private void checkGroups(int experts, int groups, int topkGroups, boolean used) {
    if (!used) {
      return;
    }
    if (groups <= 0 || experts % groups != 0) {
      throw new ModelLoadException(
          source
              + ": n_group ("
              + groups
              + ") must divide the number of experts ("
              + experts
              + ")");
    }
    if (topkGroups <= 0 || topkGroups > groups) {
      throw new ModelLoadException(
          source
              + ": topk_group ("
              + topkGroups
              + ") must be between 1 and n_group ("
              + groups
              + ")");
    }
  }

  private List<Boolean> moeLayers(Architecture arch, int layers, MoeConfig moe) {
    List<Boolean> out = new ArrayList<>(layers);
    // The DSA configs default to three dense layers, and save the pattern as mlp_layer_types.
    int firstDense = optInt("first_k_dense_replace", arch.usesSparseAttention() ? 3 : 0);
    JsonNode mlpTypes = root.path("mlp_layer_types");
    if (arch.usesSparseAttention() && mlpTypes.isArray()) {
      List<String> types = strings("mlp_layer_types", layers, "dense", "sparse");
      types.forEach(t -> out.add(moe != null && t.equals("sparse")));
      return out;
    }
    int freq = optInt("moe_layer_freq", 1);
    if (arch == Architecture.DEEPSEEK_V2 && freq != 1) {
      LOG.warning(source + ": moe_layer_freq is ignored for deepseek_v2, as transformers does");
    }
    int sparseStep = optInt("decoder_sparse_step", 1);
    Set<Integer> mlpOnly = new HashSet<>();
    root.path("mlp_only_layers").forEach(n -> mlpOnly.add(n.asInt()));
    for (int i = 0; i < layers; i++) {
      boolean isMoe =
          moe != null
              && switch (arch) {
                case DEEPSEEK_V2, DEEPSEEK_V3, DEEPSEEK_V32, GLM_MOE_DSA -> i >= firstDense;
                case QWEN3_MOE ->
                    !mlpOnly.contains(i) && sparseStep > 0 && (i + 1) % sparseStep == 0;
              };
      out.add(isMoe);
    }
    return out;
  }

  private int requireInt(String key) {
    JsonNode n = root.get(key);
    if (n == null || n.isNull()) {
      throw new ModelLoadException(source + ": required field '" + key + "' is missing");
    }
    if (!n.isIntegralNumber()) {
      throw new ModelLoadException(source + ": field '" + key + "' must be an integer, got " + n);
    }
    return n.asInt();
  }

  private int optInt(String key, int def) {
    JsonNode n = root.get(key);
    if (n == null || n.isNull()) {
      return def;
    }
    if (!n.isIntegralNumber()) {
      throw new ModelLoadException(source + ": field '" + key + "' must be an integer, got " + n);
    }
    return n.asInt();
  }

  private int firstInt(int def, String... keys) {
    for (String k : keys) {
      if (root.hasNonNull(k)) {
        return optInt(k, def);
      }
    }
    return def;
  }

  private double optDouble(String key, double def) {
    JsonNode n = root.get(key);
    if (n == null || n.isNull()) {
      return def;
    }
    if (!n.isNumber()) {
      throw new ModelLoadException(source + ": field '" + key + "' must be a number, got " + n);
    }
    return n.asDouble();
  }

  private boolean optBool(String key, boolean def) {
    JsonNode n = root.get(key);
    if (n == null || n.isNull()) {
      return def;
    }
    if (!n.isBoolean()) {
      throw new ModelLoadException(
          source + ": field '" + key + "' must be true or false, got " + n);
    }
    return n.asBoolean();
  }

  private void checkPositive(String key, int value) {
    if (value <= 0) {
      throw new ModelLoadException(source + ": field '" + key + "' must be positive, got " + value);
    }
  }
}
