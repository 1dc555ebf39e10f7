package dev.ringmaster.model.weights;

import dev.ringmaster.backend.DType;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * One tensor of a checkpoint: its name, element type, shape and bytes (a slice of the memory-mapped
 * file, never copied).
 *
 * @param name checkpoint name, e.g. {@code model.layers.0.self_attn.q_proj.weight}
 * @param dtype element type on disk
 * @param shape dimensions, outermost first
 * @param data the tensor's bytes, little-endian
 * @param file the file it lives in, for error messages
 */
public record TensorView(String name, DType dtype, long[] shape, MemorySegment data, String file) {

  /** Number of elements. */
  public long numel() {
    long n = 1;
    for (long d : shape) {
      n *= d;
    }
    return n;
  }

  /** The shape as text, e.g. {@code [64, 32]}. */
  public String shapeString() {
    return Arrays.toString(shape);
  }
}
