package dev.ringmaster.model.weights;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ringmaster.model.ModelLoadException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * All tensors of a model directory: a single {@code model.safetensors} or the shards listed by
 * {@code model.safetensors.index.json}. Tensors are looked up by name with their expected shape,
 * and any mismatch is a {@link ModelLoadException} naming the file and tensor.
 */
public final class WeightStore implements AutoCloseable {
  private static final ObjectMapper JSON = new ObjectMapper();

  private final Arena arena;
  private final Map<String, TensorView> tensors;
  private final Path dir;
  private final long totalBytes;

  private WeightStore(Arena arena, Map<String, TensorView> tensors, Path dir) {
    this.arena = arena;
    this.tensors = tensors;
    this.dir = dir;
    this.totalBytes = tensors.values().stream().mapToLong(t -> t.data().byteSize()).sum();
  }

  /** Opens the weights of a model directory. */
  public static WeightStore open(Path dir) {
    Arena arena = Arena.ofShared();
    try {
      Map<String, TensorView> all = new HashMap<>();
      Path single = dir.resolve("model.safetensors");
      Path index = dir.resolve("model.safetensors.index.json");
      if (Files.exists(index)) {
        JsonNode map;
        try {
          map = JSON.readTree(Files.readString(index)).path("weight_map");
        } catch (IOException e) {
          throw new ModelLoadException(index + ": not valid JSON (" + e.getMessage() + ")", e);
        }
        if (!map.isObject()) {
          throw new ModelLoadException(index + ": no 'weight_map' object");
        }
        Set<String> shards = new LinkedHashSet<>();
        map.properties().forEach(e -> shards.add(e.getValue().asText()));
        for (String shard : shards) {
          SafetensorsFile f = SafetensorsFile.open(dir.resolve(shard), arena);
          all.putAll(f.tensors());
        }
        for (var e : map.properties()) {
          if (!all.containsKey(e.getKey())) {
            throw new ModelLoadException(
                dir.resolve(e.getValue().asText())
                    + ": tensor '"
                    + e.getKey()
                    + "' is listed in model.safetensors.index.json but missing from the shard");
          }
        }
      } else if (Files.exists(single)) {
        all.putAll(SafetensorsFile.open(single, arena).tensors());
      } else {
        throw new ModelLoadException(
            dir + ": no model.safetensors or model.safetensors.index.json found");
      }
      return new WeightStore(arena, Map.copyOf(all), dir);
    } catch (RuntimeException e) {
      arena.close();
      throw e;
    }
  }

  /** Whether a tensor exists. */
  public boolean contains(String name) {
    return tensors.containsKey(name);
  }

  /** All tensor names, sorted. */
  public Set<String> names() {
    return new TreeSet<>(tensors.keySet());
  }

  /** Total bytes of all tensors. */
  public long totalBytes() {
    return totalBytes;
  }

  /** The model directory. */
  public Path dir() {
    return dir;
  }

  /**
   * Returns a tensor, checking its shape.
   *
   * @throws ModelLoadException when it is missing or its shape differs
   */
  public TensorView require(String name, long... expectedShape) {
    TensorView t = tensors.get(name);
    if (t == null) {
      throw new ModelLoadException(
          dir + ": tensor '" + name + "' is missing from the checkpoint (does config.json match?)");
    }
    if (!Arrays.equals(t.shape(), expectedShape)) {
      throw new ModelLoadException(
          t.file()
              + ": tensor '"
              + name
              + "' has shape "
              + t.shapeString()
              + ", expected "
              + Arrays.toString(expectedShape)
              + " from config.json");
    }
    return t;
  }

  /** The tensor {@code name} whatever its shape, or null when the checkpoint lacks it. */
  public TensorView get(String name) {
    return tensors.get(name);
  }

  /** Returns a tensor if present (shape checked), else null. */
  public TensorView optional(String name, long... expectedShape) {
    return tensors.containsKey(name) ? require(name, expectedShape) : null;
  }

  @Override
  public void close() {
    arena.close();
  }
}
