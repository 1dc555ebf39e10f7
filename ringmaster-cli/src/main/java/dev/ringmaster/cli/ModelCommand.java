package dev.ringmaster.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ringmaster.backend.DType;
import dev.ringmaster.cuda.model.MemoryPlan;
import dev.ringmaster.model.arch.CheckpointLayout;
import dev.ringmaster.model.config.IndexerCacheDtype;
import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.model.config.ModelConfigParser;
import dev.ringmaster.model.quant.CheckpointQuantizer;
import dev.ringmaster.model.quant.QuantFormat;
import dev.ringmaster.model.random.RandomModelWriter;
import dev.ringmaster.model.weights.WeightStore;
import dev.ringmaster.runtime.KvCache;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code ringmaster model}: make random-weight models and describe models. */
@Command(
    name = "model",
    mixinStandardHelpOptions = true,
    description = "Model utilities.",
    subcommands = {ModelCommand.Random.class, ModelCommand.Info.class, ModelCommand.Quantize.class})
final class ModelCommand implements Runnable {
  @Override
  public void run() {
    throw new UserError("choose a subcommand: model random | model info | model quantize");
  }

  /** {@code ringmaster model random}. */
  @Command(
      name = "random",
      mixinStandardHelpOptions = true,
      description = "Write a random-weight model (config + safetensors) for any supported config.")
  static final class Random implements Callable<Integer> {
    @Option(names = "--config", required = true, description = "A Hugging Face config.json.")
    Path config;

    @Option(names = "--out", required = true, description = "Output model directory.")
    Path out;

    @Option(names = "--dtype", defaultValue = "bf16", description = "f32, bf16 or f16.")
    String dtype;

    @Option(names = "--seed", defaultValue = "0", description = "Seed of the weights.")
    long seed;

    @Option(
        names = "--tokenizer",
        description = "tokenizer.json (and its directory's config) to copy.")
    Path tokenizer;

    @Override
    public Integer call() throws Exception {
      RandomModelWriter.Result r = RandomModelWriter.write(config, out, DType.parse(dtype), seed);
      if (tokenizer != null) {
        Files.copy(tokenizer, out.resolve("tokenizer.json"), StandardCopyOption.REPLACE_EXISTING);
        Path tc = tokenizer.resolveSibling("tokenizer_config.json");
        if (Files.exists(tc)) {
          Files.copy(tc, out.resolve("tokenizer_config.json"), StandardCopyOption.REPLACE_EXISTING);
        }
      }
      System.out.printf(
          "wrote %s: %,d parameters, %.2f GB in %d shard(s)%n",
          r.dir(), r.parameters(), r.bytes() / 1e9, r.shards());
      return 0;
    }
  }

  /** {@code ringmaster model quantize}. */
  @Command(
      name = "quantize",
      mixinStandardHelpOptions = true,
      description = {
        "Write a quantized copy of an f32/bf16/f16 model: fp8 = DeepSeek block-scaled FP8"
            + " (weight_scale_inv per 128x128 block), nvfp4 = ModelOpt NVFP4 (e2m1 codes, e4m3"
            + " scales per 16, hf_quant_config.json).",
        "Every decoder linear is quantized except those matched by --exclude; embeddings, norms,"
            + " routers and the LM head stay as they are."
      })
  static final class Quantize implements Callable<Integer> {
    @Option(names = "--model", required = true, description = "The model directory to quantize.")
    Path model;

    @Option(names = "--out", required = true, description = "Output model directory.")
    Path out;

    @Option(
        names = {"--to", "--format"},
        required = true,
        description = "fp8 or nvfp4.")
    String format;

    @Option(
        names = "--exclude",
        split = ",",
        description =
            "Modules to leave unquantized: names (model.layers.0.mlp.down_proj), parents"
                + " (model.layers.0.self_attn) or globs (*.self_attn.*); comma-separated or"
                + " repeated.")
    List<String> exclude = new ArrayList<>();

    @Option(
        names = "--threads",
        description =
            "Modules quantized at once, one per thread (default: every core, ${DEFAULT-VALUE}"
                + " here).")
    int threads = Runtime.getRuntime().availableProcessors();

    @Override
    public Integer call() throws Exception {
      if (threads < 1) {
        throw new UserError("--threads must be at least 1, got " + threads);
      }
      QuantFormat f;
      try {
        f = QuantFormat.parse(format);
      } catch (IllegalArgumentException e) {
        throw new UserError("--format: " + e.getMessage());
      }
      CheckpointQuantizer.Result r;
      try {
        r = new CheckpointQuantizer(f, exclude, threads).run(model, out);
      } catch (IllegalArgumentException e) {
        throw new UserError(e.getMessage());
      }
      System.out.printf(
          "wrote %s: %d linear modules quantized to %s, %d kept, %.2f MB of weights%n",
          out, r.quantized().size(), format, r.kept().size(), r.bytes() / 1e6);
      return 0;
    }
  }

  /** {@code ringmaster model info}. */
  @Command(
      name = "info",
      mixinStandardHelpOptions = true,
      description =
          "Describe a model: architecture, parameters, quantization, weight bytes as stored,"
              + " KV cache bytes per token on the CPU (f32 rows) and the GPU (bf16 rows).")
  static final class Info implements Callable<Integer> {
    @Option(
        names = {"--model", "--config"},
        description = "Model directory or config.json (--config is the same option).")
    Path model;

    @Option(
        names = "--indexer-cache-dtype",
        paramLabel = "DTYPE",
        defaultValue = "auto",
        description =
            "DeepSeek Sparse Attention models: count the indexer keys as a run with this"
                + " --indexer-cache-dtype stores them: auto (f32 on the CPU, bf16 on the GPU) or"
                + " fp8_e4m3 (codes and one f32 scale per key; default: ${DEFAULT-VALUE}).")
    String indexerCacheDtype;

    @Override
    public Integer call() throws Exception {
      Path p = model != null && Files.isRegularFile(model) ? model : DefaultModel.resolve(model);
      IndexerCacheDtype keys;
      try {
        keys = IndexerCacheDtype.parse(indexerCacheDtype);
      } catch (IllegalArgumentException e) {
        throw new UserError(
            "--indexer-cache-dtype must be auto or fp8_e4m3, got '" + indexerCacheDtype + "'");
      }
      ModelConfig cfg;
      try {
        cfg = ModelConfigParser.parse(p).withIndexerCache(keys);
      } catch (IllegalArgumentException e) {
        throw new UserError(e.getMessage());
      }
      ObjectNode o = new ObjectMapper().createObjectNode();
      o.put("model_type", cfg.architecture().modelType());
      o.put("layers", cfg.numLayers());
      o.put("hidden_size", cfg.hiddenSize());
      o.put("parameters", CheckpointLayout.parameterCount(cfg));
      o.put("kv_bytes_per_token_cpu", KvCache.bytesPerToken(cfg));
      o.put("kv_bytes_per_token_gpu", MemoryPlan.kvBytesPerToken(cfg));
      o.put("kv_values_per_token_per_layer", cfg.kvValuesPerTokenPerLayer());
      o.put("quantization", cfg.quantization().method().name().toLowerCase(java.util.Locale.ROOT));
      Path dir = Files.isDirectory(p) ? p : p.getParent();
      if (dir != null && hasWeights(dir)) {
        // The checkpoint's bytes as stored: FP8 codes and scales count as they are.
        try (WeightStore store = WeightStore.open(dir)) {
          o.put("weight_bytes", store.totalBytes());
        }
      }
      if (cfg.moe() != null) {
        o.put("experts", cfg.moe().numExperts());
        o.put("experts_per_token", cfg.moe().topK());
      }
      if (cfg.sparseAttention() != null) {
        o.put("index_topk", cfg.sparseAttention().topK());
        o.put("index_heads", cfg.sparseAttention().indexHeads());
        o.put("index_head_dim", cfg.sparseAttention().indexHeadDim());
        o.put("indexed_layers", cfg.sparseAttention().indexedLayers());
        o.put("indexer_values_per_token", cfg.indexerValuesPerToken());
        o.put("indexer_cache_dtype", cfg.sparseAttention().keyCache().cliName());
        o.put("indexer_bytes_per_token_cpu", cfg.sparseAttention().keyBytesPerToken(4));
        o.put("indexer_bytes_per_token_gpu", cfg.sparseAttention().keyBytesPerToken(2));
      }
      System.out.println(
          new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValueAsString(o));
      return 0;
    }

    private static boolean hasWeights(Path dir) throws java.io.IOException {
      try (var files = Files.list(dir)) {
        return files.anyMatch(f -> f.getFileName().toString().endsWith(".safetensors"));
      }
    }
  }
}
