package dev.ringmaster.model.config;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ringmaster.model.ModelLoadException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * Reads the quantization settings of a checkpoint: {@code config.json}'s {@code
 * quantization_config} (DeepSeek {@code quant_method: "fp8"} or ModelOpt {@code "modelopt"}) and,
 * where present, ModelOpt's {@code hf_quant_config.json}. When both files describe the checkpoint
 * they must agree on the algorithm and group size; a module excluded in either is excluded.
 * Anything Ringmaster does not read exactly is refused with the field that says so.
 */
public final class QuantizationConfigParser {
  /** The FP8 block size of DeepSeek checkpoints, the only one supported. */
  public static final int FP8_BLOCK = 128;

  /** The NVFP4 group size, the only one supported. */
  public static final int NVFP4_GROUP = 16;

  private static final ObjectMapper JSON = new ObjectMapper();

  private QuantizationConfigParser() {}

  /**
   * The settings of {@code config.json} (its parsed {@code root}, from {@code configSource}) and of
   * {@code hfQuantConfig} when that file exists (null: not looked for).
   */
  public static QuantizationConfig parse(JsonNode root, String configSource, Path hfQuantConfig) {
    JsonNode qc = root.path("quantization_config");
    QuantizationConfig fromConfig =
        qc.isObject() ? fromConfigJson(qc, configSource + ": quantization_config") : null;
    QuantizationConfig fromModelOpt = null;
    if (hfQuantConfig != null && Files.exists(hfQuantConfig)) {
      JsonNode hq;
      try {
        hq = JSON.readTree(Files.readString(hfQuantConfig));
      } catch (IOException e) {
        throw new ModelLoadException(
            hfQuantConfig + ": not valid JSON (" + e.getMessage() + ")", e);
      }
      fromModelOpt = fromHfQuantConfig(hq, hfQuantConfig.toString());
    }
    if (fromConfig == null) {
      return fromModelOpt == null ? QuantizationConfig.NONE : fromModelOpt;
    }
    if (fromModelOpt == null) {
      return fromConfig;
    }
    if (fromConfig.method() != fromModelOpt.method()
        || fromConfig.groupSize() != fromModelOpt.groupSize()) {
      throw new ModelLoadException(
          fromConfig.source()
              + " says "
              + describe(fromConfig)
              + " but "
              + fromModelOpt.source()
              + " says "
              + describe(fromModelOpt)
              + "; the two files must describe the same quantization");
    }
    Set<String> excluded = new LinkedHashSet<>(fromConfig.excluded());
    excluded.addAll(fromModelOpt.excluded());
    String kv =
        fromModelOpt.kvCacheQuantAlgo().isEmpty()
            ? fromConfig.kvCacheQuantAlgo()
            : fromModelOpt.kvCacheQuantAlgo();
    return new QuantizationConfig(
        fromConfig.method(),
        fromConfig.blockRows(),
        fromConfig.blockCols(),
        fromConfig.groupSize(),
        List.copyOf(excluded),
        kv,
        fromConfig.source() + " and " + fromModelOpt.source());
  }

  private static String describe(QuantizationConfig q) {
    return q.method() + (q.groupSize() > 0 ? " with group size " + q.groupSize() : "");
  }

  private static QuantizationConfig fromConfigJson(JsonNode qc, String where) {
    String method = qc.path("quant_method").asText("");
    return switch (method) {
      case "fp8" -> deepseekFp8(qc, where);
      case "modelopt" -> modelOpt(qc, qc.path("quant_algo").asText(""), groupSize(qc), where);
      default ->
          throw new ModelLoadException(
              where
                  + ": quant_method '"
                  + method
                  + "' is not supported (supported: 'fp8' as DeepSeek writes it, 'modelopt' with"
                  + " quant_algo FP8 or NVFP4)");
    };
  }

  private static QuantizationConfig deepseekFp8(JsonNode qc, String where) {
    String fmt = qc.path("fmt").asText("e4m3");
    if (!fmt.equals("e4m3")) {
      throw new ModelLoadException(
          where + ": fmt '" + fmt + "' is not supported (FP8 weights must be e4m3)");
    }
    String act = qc.path("activation_scheme").asText("dynamic");
    if (!act.equals("dynamic")) {
      throw new ModelLoadException(
          where
              + ": activation_scheme '"
              + act
              + "' is not supported (block-scaled FP8 checkpoints use 'dynamic')");
    }
    JsonNode block = qc.path("weight_block_size");
    if (block.isMissingNode() || block.isNull()) {
      throw new ModelLoadException(
          where
              + ": weight_block_size is missing; per-tensor FP8 under quant_method 'fp8' is not"
              + " supported (block-scaled checkpoints say [128, 128])");
    }
    if (!block.isArray()
        || block.size() != 2
        || block.get(0).asInt() != FP8_BLOCK
        || block.get(1).asInt() != FP8_BLOCK) {
      throw new ModelLoadException(
          where + ": weight_block_size " + block + " is not supported (only [128, 128])");
    }
    return new QuantizationConfig(
        QuantizationConfig.Method.FP8_BLOCK,
        FP8_BLOCK,
        FP8_BLOCK,
        0,
        strings(qc.path("modules_to_not_convert"), where + ".modules_to_not_convert"),
        "",
        where);
  }

  private static QuantizationConfig modelOpt(
      JsonNode node, String algo, int groupSize, String where) {
    List<String> excluded = new ArrayList<>();
    excluded.addAll(strings(node.path("ignore"), where + ".ignore"));
    excluded.addAll(strings(node.path("exclude_modules"), where + ".exclude_modules"));
    String kv =
        node.path("kv_cache_quant_algo").isTextual()
            ? node.get("kv_cache_quant_algo").asText()
            : "";
    return switch (algo.toUpperCase(Locale.ROOT)) {
      case "NVFP4" -> {
        if (groupSize != NVFP4_GROUP) {
          throw new ModelLoadException(
              where
                  + ": NVFP4 group_size "
                  + (groupSize == 0 ? "is missing" : groupSize + " is not supported")
                  + " (NVFP4 scales blocks of 16 elements: group_size 16)");
        }
        yield new QuantizationConfig(
            QuantizationConfig.Method.NVFP4, 0, 0, groupSize, excluded, kv, where);
      }
      case "FP8" ->
          new QuantizationConfig(
              QuantizationConfig.Method.FP8_TENSOR, 0, 0, 0, excluded, kv, where);
      default ->
          throw new ModelLoadException(
              where
                  + ": quant_algo '"
                  + algo
                  + "' is not supported (supported ModelOpt algorithms: NVFP4, FP8)");
    };
  }

  private static QuantizationConfig fromHfQuantConfig(JsonNode hq, String file) {
    String producer = hq.path("producer").path("name").asText("");
    if (!producer.equals("modelopt")) {
      throw new ModelLoadException(
          file
              + ": producer.name '"
              + producer
              + "' is not supported (hf_quant_config.json is read as ModelOpt writes it:"
              + " producer.name 'modelopt')");
    }
    JsonNode q = hq.path("quantization");
    if (!q.isObject()) {
      throw new ModelLoadException(file + ": no 'quantization' object");
    }
    return modelOpt(
        q, q.path("quant_algo").asText(""), q.path("group_size").asInt(0), file + ": quantization");
  }

  /** ModelOpt writes the group size at the top or inside {@code config_groups.*.weights}. */
  private static int groupSize(JsonNode qc) {
    if (qc.path("group_size").isInt()) {
      return qc.get("group_size").asInt();
    }
    for (JsonNode group : qc.path("config_groups")) {
      JsonNode g = group.path("weights").path("group_size");
      if (g.isInt()) {
        return g.asInt();
      }
    }
    return 0;
  }

  private static List<String> strings(JsonNode n, String where) {
    if (n.isMissingNode() || n.isNull()) {
      return List.of();
    }
    if (!n.isArray()) {
      throw new ModelLoadException(where + ": expected a list of module names");
    }
    List<String> out = new ArrayList<>();
    for (JsonNode e : n) {
      if (!e.isTextual()) {
        throw new ModelLoadException(where + ": expected module names, found " + e);
      }
      out.add(e.asText());
    }
    return out;
  }
}
