package dev.ringmaster.cuda.kernels;

import dev.ringmaster.cuda.driver.DeviceBuffer;

/**
 * Device scratch of {@link GqaAttention#attention} with more than one split: the split partials
 * (context rows {@code [tokens, heads, splits, headDim]}, maxima and sums {@code [tokens, heads,
 * splits]}, f32) for at most {@code maxTokenSplits} (tokens x splits) and {@code maxSplits} splits.
 * Long prefills need few splits and decode many, so the partials are sized by the product. A step
 * with one split needs none of it.
 */
public final class GqaWorkspace implements AutoCloseable {
  final int maxSplits;
  final long maxTokenSplits;
  final int heads;
  final int headDim;
  final DeviceBuffer partialOut;
  final DeviceBuffer partialMax;
  final DeviceBuffer partialSum;

  /** Scratch for {@code maxTokenSplits} token-splits of {@code shape}'s heads. */
  public GqaWorkspace(int maxSplits, long maxTokenSplits, GqaAttention.Shape shape) {
    if (maxSplits < 1 || maxTokenSplits < 1) {
      throw new IllegalArgumentException(
          "a GQA workspace needs at least one split and one token-split, got "
              + maxSplits
              + " and "
              + maxTokenSplits);
    }
    this.maxSplits = maxSplits;
    this.maxTokenSplits = maxTokenSplits;
    this.heads = shape.heads();
    this.headDim = shape.headDim();
    long partials = maxTokenSplits * heads;
    partialOut = DeviceBuffer.allocate(4L * partials * headDim);
    partialMax = DeviceBuffer.allocate(4L * partials);
    partialSum = DeviceBuffer.allocate(4L * partials);
  }

  /** Bytes of device memory held. */
  public long bytes() {
    return partialOut.bytes() + partialMax.bytes() + partialSum.bytes();
  }

  /** The most splits that {@code tokens} query tokens may use with this scratch. */
  public int splitLimit(int tokens) {
    return (int) Math.max(1, Math.min(maxSplits, maxTokenSplits / Math.max(tokens, 1)));
  }

  /** Rejects a launch whose partials would not fit. */
  void check(int tokens, int splits, GqaAttention.Shape shape) {
    if (shape.heads() > heads || shape.headDim() != headDim) {
      throw new IllegalArgumentException(
          "the GQA workspace holds "
              + heads
              + " heads of "
              + headDim
              + ", not "
              + shape.heads()
              + " of "
              + shape.headDim());
    }
    if (splits > maxSplits || (long) tokens * splits > maxTokenSplits) {
      throw new IllegalArgumentException(
          tokens
              + " tokens x "
              + splits
              + " splits exceed the GQA workspace ("
              + maxSplits
              + " splits, "
              + maxTokenSplits
              + " token-splits): take fewer splits (splitLimit) or a larger workspace");
    }
  }

  @Override
  public void close() {
    partialOut.close();
    partialMax.close();
    partialSum.close();
  }
}
