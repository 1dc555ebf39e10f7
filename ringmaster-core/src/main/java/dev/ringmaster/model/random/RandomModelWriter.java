package dev.ringmaster.model.random;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ringmaster.backend.DType;
import dev.ringmaster.backend.cpu.Numerics;
import dev.ringmaster.model.ModelLoadException;
import dev.ringmaster.model.arch.CheckpointLayout;
import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.model.config.ModelConfigParser;
import dev.ringmaster.model.weights.SafetensorsWriter;
import dev.ringmaster.model.weights.TensorSpec;
import dev.ringmaster.util.Progress;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Writes a random-weight model of any supported architecture: config.json, safetensors (sharded
 * above {@link #SHARD_BYTES}) and generation_config.json. Values are streamed to disk, so a model
 * much larger than the heap can be written; they are a deterministic function of the seed, the
 * tensor name and the element index (uniform noise with the configured {@code initializer_range} as
 * standard deviation).
 */
public final class RandomModelWriter {
  /** Largest shard written, as transformers' default of 5 GB. */
  public static final long SHARD_BYTES = 5_000_000_000L;

  private RandomModelWriter() {}

  /** Summary of what was written. */
  public record Result(Path dir, long parameters, long bytes, int shards) {}

  /** Writes the model for {@code configJson} into {@code outDir}. */
  public static Result write(Path configJson, Path outDir, DType dtype, long seed)
      throws IOException {
    ModelConfig cfg = ModelConfigParser.parse(configJson);
    ObjectMapper json = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    ObjectNode raw = (ObjectNode) json.readTree(Files.readString(configJson));
    double std = raw.path("initializer_range").asDouble(0.02);
    Files.createDirectories(outDir);
    raw.put("dtype", torchName(dtype));
    json.writeValue(outDir.resolve("config.json").toFile(), raw);
    ObjectNode gen = json.createObjectNode();
    if (cfg.bosTokenId() >= 0) {
      gen.put("bos_token_id", cfg.bosTokenId());
    }
    if (!cfg.eosTokenIds().isEmpty()) {
      gen.put("eos_token_id", cfg.eosTokenIds().getFirst());
    }
    gen.put("do_sample", false);
    json.writeValue(outDir.resolve("generation_config.json").toFile(), gen);

    List<TensorSpec> specs = CheckpointLayout.checkpointTensors(cfg, dtype);
    List<List<TensorSpec>> shards = new ArrayList<>();
    long size = 0;
    for (TensorSpec s : specs) {
      if (shards.isEmpty() || (size + s.bytes() > SHARD_BYTES && size > 0)) {
        shards.add(new ArrayList<>());
        size = 0;
      }
      shards.getLast().add(s);
      size += s.bytes();
    }
    long total = specs.stream().mapToLong(TensorSpec::bytes).sum();
    long params = specs.stream().mapToLong(TensorSpec::numel).sum();
    Map<String, String> weightMap = new LinkedHashMap<>();
    try (Progress p = Progress.start("writing weights", total, "B")) {
      for (int i = 0; i < shards.size(); i++) {
        String name =
            shards.size() == 1
                ? "model.safetensors"
                : String.format("model-%05d-of-%05d.safetensors", i + 1, shards.size());
        for (TensorSpec s : shards.get(i)) {
          weightMap.put(s.name(), name);
        }
        SafetensorsWriter.write(
            outDir.resolve(name),
            shards.get(i),
            (s, off, buf) -> fill(s, off, buf, seed, std),
            p::step);
      }
    }
    if (shards.size() > 1) {
      ObjectNode index = json.createObjectNode();
      index.putObject("metadata").put("total_size", total).put("total_parameters", params);
      ObjectNode wm = index.putObject("weight_map");
      weightMap.forEach(wm::put);
      json.writeValue(outDir.resolve("model.safetensors.index.json").toFile(), index);
    } else {
      Files.deleteIfExists(outDir.resolve("model.safetensors.index.json"));
    }
    return new Result(outDir, params, total, shards.size());
  }

  private static String torchName(DType d) {
    return switch (d) {
      case F32 -> "float32";
      case BF16 -> "bfloat16";
      case F16 -> "float16";
      default -> throw new ModelLoadException("random models are written in f32, bf16 or f16");
    };
  }

  static void fill(TensorSpec s, long byteOff, ByteBuffer buf, long seed, double std) {
    int elem = s.dtype().bytes();
    long first = byteOff / elem;
    int n = buf.remaining() / elem;
    long stream = seed * 0x9E3779B97F4A7C15L + s.name().hashCode();
    // Uniform noise on [-a, a] has standard deviation a / sqrt(3).
    float a = (float) (std * Math.sqrt(3.0));
    int pos = buf.position();
    for (int i = 0; i < n; i++) {
      float v =
          switch (s.init()) {
            case ONES -> 1f;
            case ZEROS -> 0f;
            case NORMAL -> a * uniform(stream, first + i);
          };
      switch (s.dtype()) {
        case F32 -> buf.putFloat(pos + i * 4, v);
        case BF16 -> buf.putShort(pos + i * 2, Numerics.floatToBf16(v));
        case F16 -> buf.putShort(pos + i * 2, Numerics.floatToF16(v));
        default -> throw new IllegalStateException(s.dtype().toString());
      }
    }
  }

  /** A uniform value in [-1, 1) from a counter-based hash (SplitMix64 finaliser). */
  private static float uniform(long stream, long index) {
    long z = stream + index * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    z = z ^ (z >>> 31);
    return ((z >>> 40) * 0x1.0p-24f) * 2f - 1f;
  }
}
