package dev.ringmaster.model.weights;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ringmaster.backend.DType;
import dev.ringmaster.model.ModelLoadException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A memory-mapped safetensors file: an 8-byte little-endian header length, a JSON header mapping
 * tensor names to dtype, shape and byte offsets, then the raw data. The file is mapped read-only
 * through the FFM API, so weights are paged in on use and never copied to the Java heap.
 */
public final class SafetensorsFile {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final long MAX_HEADER = 100L << 20;

  private final Path path;
  private final Map<String, TensorView> tensors;
  private final Map<String, String> metadata;

  private SafetensorsFile(
      Path path, Map<String, TensorView> tensors, Map<String, String> metadata) {
    this.path = path;
    this.tensors = tensors;
    this.metadata = metadata;
  }

  /** Maps a file into {@code arena}; the mapping lives as long as the arena. */
  public static SafetensorsFile open(Path path, Arena arena) {
    MemorySegment file;
    try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ)) {
      file = ch.map(FileChannel.MapMode.READ_ONLY, 0, ch.size(), arena);
    } catch (NoSuchFileException e) {
      throw new ModelLoadException(path + ": weights file not found");
    } catch (IOException e) {
      throw new ModelLoadException(path + ": cannot be read (" + e.getMessage() + ")", e);
    }
    long size = file.byteSize();
    if (size < 8) {
      throw new ModelLoadException(
          path + ": truncated safetensors file (" + size + " bytes, header length missing)");
    }
    long headerLen =
        file.get(ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), 0);
    if (headerLen <= 0 || headerLen > MAX_HEADER || 8 + headerLen > size) {
      throw new ModelLoadException(
          path
              + ": not a safetensors file or truncated (header length "
              + headerLen
              + ", file size "
              + size
              + ")");
    }
    byte[] headerBytes = file.asSlice(8, headerLen).toArray(ValueLayout.JAVA_BYTE);
    JsonNode header;
    try {
      header = JSON.readTree(new String(headerBytes, StandardCharsets.UTF_8));
    } catch (IOException e) {
      throw new ModelLoadException(path + ": safetensors header is not valid JSON", e);
    }
    long dataStart = 8 + headerLen;
    long dataSize = size - dataStart;
    Map<String, TensorView> tensors = new LinkedHashMap<>();
    Map<String, String> metadata = new LinkedHashMap<>();
    for (Iterator<Map.Entry<String, JsonNode>> it = header.properties().iterator();
        it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      String name = e.getKey();
      JsonNode info = e.getValue();
      if (name.equals("__metadata__")) {
        info.properties().forEach(m -> metadata.put(m.getKey(), m.getValue().asText()));
        continue;
      }
      DType dtype = DType.fromSafetensors(info.path("dtype").asText());
      if (dtype == null) {
        throw new ModelLoadException(
            path
                + ": tensor '"
                + name
                + "' has unsupported dtype "
                + info.path("dtype").asText()
                + " (supported: F32, BF16, F16, I64, I32, U8, F8_E4M3)");
      }
      JsonNode shapeNode = info.path("shape");
      long[] shape = new long[shapeNode.size()];
      long numel = 1;
      for (int i = 0; i < shape.length; i++) {
        shape[i] = shapeNode.get(i).asLong();
        numel *= shape[i];
      }
      JsonNode offs = info.path("data_offsets");
      long begin = offs.path(0).asLong(-1);
      long end = offs.path(1).asLong(-1);
      if (begin < 0 || end < begin || end - begin != numel * dtype.bytes()) {
        throw new ModelLoadException(
            path + ": tensor '" + name + "' has inconsistent data_offsets for its shape and dtype");
      }
      if (end > dataSize) {
        throw new ModelLoadException(
            path
                + ": truncated file: tensor '"
                + name
                + "' ends at byte "
                + (dataStart + end)
                + " but the file has "
                + size
                + " bytes (re-copy or re-download the file)");
      }
      MemorySegment data = file.asSlice(dataStart + begin, end - begin);
      tensors.put(name, new TensorView(name, dtype, shape, data, path.toString()));
    }
    return new SafetensorsFile(path, Map.copyOf(tensors), Map.copyOf(metadata));
  }

  /** The file's path. */
  public Path path() {
    return path;
  }

  /** Tensors by name. */
  public Map<String, TensorView> tensors() {
    return tensors;
  }

  /** The optional {@code __metadata__} entries. */
  public Map<String, String> metadata() {
    return metadata;
  }
}
