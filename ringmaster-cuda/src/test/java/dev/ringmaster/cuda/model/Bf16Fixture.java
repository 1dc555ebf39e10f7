package dev.ringmaster.cuda.model;

import dev.ringmaster.backend.DType;
import dev.ringmaster.backend.cpu.Numerics;
import dev.ringmaster.model.weights.SafetensorsWriter;
import dev.ringmaster.model.weights.TensorSpec;
import dev.ringmaster.model.weights.TensorView;
import dev.ringmaster.model.weights.WeightStore;
import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * A copy of an f32 golden fixture whose matrices are rounded to bf16 values (still stored as f32)
 * and whose vectors (norm weights and biases, which the GPU keeps in f32) are kept: what the GPU
 * uploads, so the CPU engine on the copy is the GPU's exact reference for weights.
 */
final class Bf16Fixture {
  private Bf16Fixture() {}

  /** Writes the rounded copy of {@code dir} into {@code out} (created) and returns it. */
  static Path roundedCopy(Path dir, Path out) throws IOException {
    Files.createDirectories(out);
    try (Stream<Path> files = Files.list(dir)) {
      for (Path f : files.toList()) {
        if (!f.getFileName().toString().endsWith(".safetensors")) {
          Files.copy(f, out.resolve(f.getFileName()));
        }
      }
    }
    try (WeightStore store = WeightStore.open(dir)) {
      List<TensorSpec> specs = new ArrayList<>();
      Map<String, TensorView> views = new HashMap<>();
      for (String name : store.names().stream().sorted().toList()) {
        TensorView v = store.get(name);
        if (v.dtype() != DType.F32) {
          throw new IllegalArgumentException(name + " is " + v.dtype() + ", not an f32 fixture");
        }
        specs.add(new TensorSpec(name, v.shape(), DType.F32, TensorSpec.Init.ZEROS));
        views.put(name, v);
      }
      ValueLayout.OfFloat le = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
      SafetensorsWriter.write(
          out.resolve("model.safetensors"),
          specs,
          (spec, offset, buf) -> {
            TensorView v = views.get(spec.name());
            boolean matrix = spec.shape().length >= 2;
            for (int i = buf.position(); i < buf.limit(); i += 4) {
              float x = v.data().get(le, offset + (i - buf.position()));
              buf.putFloat(i, matrix ? Numerics.bf16ToFloat(Numerics.floatToBf16(x)) : x);
            }
          },
          bytes -> {});
    }
    return out;
  }
}
