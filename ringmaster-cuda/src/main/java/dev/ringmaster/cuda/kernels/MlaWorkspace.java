package dev.ringmaster.cuda.kernels;

import dev.ringmaster.cuda.driver.DeviceBuffer;

/**
 * Device scratch of MLA attention for up to {@code maxTokens} query tokens and {@code maxSplits} KV
 * splits, with at most {@code maxTokenSplits} (tokens x splits) partials: the absorbed queries, the
 * split partials and the latent context. Long prefills need few splits and decode many, so the
 * partials are sized by the product rather than by both maxima.
 */
public final class MlaWorkspace implements AutoCloseable {
  final int maxTokens;
  final int maxSplits;
  final long maxTokenSplits;
  final DeviceBuffer qLatent;
  final DeviceBuffer partialCtx;
  final DeviceBuffer partialMax;
  final DeviceBuffer partialSum;
  final DeviceBuffer ctx;

  /** Allocates scratch for {@code heads} heads of latent rank {@code kvLora}. */
  public MlaWorkspace(int maxTokens, int maxSplits, int heads, int kvLora, int ropeDim) {
    this(maxTokens, maxSplits, (long) maxTokens * maxSplits, heads, kvLora, ropeDim);
  }

  /** Allocates scratch whose split partials hold at most {@code maxTokenSplits} token-splits. */
  public MlaWorkspace(
      int maxTokens, int maxSplits, long maxTokenSplits, int heads, int kvLora, int ropeDim) {
    this.maxTokens = maxTokens;
    this.maxSplits = maxSplits;
    this.maxTokenSplits = maxTokenSplits;
    long rows = (long) maxTokens * heads;
    long partials = maxTokenSplits * heads;
    qLatent = DeviceBuffer.allocate(4L * rows * (kvLora + ropeDim));
    partialCtx = DeviceBuffer.allocate(4L * partials * kvLora);
    partialMax = DeviceBuffer.allocate(4L * partials);
    partialSum = DeviceBuffer.allocate(4L * partials);
    ctx = DeviceBuffer.allocate(4L * rows * kvLora);
  }

  /** Bytes of device memory held. */
  public long bytes() {
    return qLatent.bytes()
        + partialCtx.bytes()
        + partialMax.bytes()
        + partialSum.bytes()
        + ctx.bytes();
  }

  /** Absorbed queries {@code [maxTokens, heads, kvLora + ropeDim]} (f32). */
  public long qLatentPtr() {
    return qLatent.ptr();
  }

  /** Latent context {@code [maxTokens, heads, kvLora]} (f32). */
  public long contextPtr() {
    return ctx.ptr();
  }

  /** The most splits that {@code tokens} query tokens may use with this scratch. */
  public int splitLimit(int tokens) {
    return (int) Math.max(1, Math.min(maxSplits, maxTokenSplits / Math.max(tokens, 1)));
  }

  @Override
  public void close() {
    qLatent.close();
    partialCtx.close();
    partialMax.close();
    partialSum.close();
    ctx.close();
  }
}
