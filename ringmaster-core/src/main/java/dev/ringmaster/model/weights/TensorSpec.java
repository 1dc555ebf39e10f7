package dev.ringmaster.model.weights;

import dev.ringmaster.backend.DType;

/**
 * The name, shape and element type of one checkpoint tensor, before any data exists.
 *
 * @param name checkpoint name
 * @param shape dimensions
 * @param dtype element type
 * @param init how a random checkpoint fills it
 */
public record TensorSpec(String name, long[] shape, DType dtype, Init init) {
  /** How a random-weight checkpoint initialises a tensor. */
  public enum Init {
    /** zero-mean noise with the configured standard deviation (matrices). */
    NORMAL,
    /** all ones (norm weights). */
    ONES,
    /** all zeros (biases, router correction bias). */
    ZEROS
  }

  /** Number of elements. */
  public long numel() {
    long n = 1;
    for (long d : shape) {
      n *= d;
    }
    return n;
  }

  /** Size in bytes. */
  public long bytes() {
    return numel() * dtype.bytes();
  }
}
