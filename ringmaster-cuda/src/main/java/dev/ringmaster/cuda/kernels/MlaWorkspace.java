package dev.ringmaster.cuda.kernels;

import dev.ringmaster.cuda.driver.DeviceBuffer;

/**
 * Device scratch of MLA attention for up to {@code maxTokens} query tokens and {@code maxSplits} KV
 * splits: the absorbed queries, the split partials and the latent context.
 */
public final class MlaWorkspace implements AutoCloseable {
  final int maxTokens;
  final int maxSplits;
  final DeviceBuffer qLatent;
  final DeviceBuffer partialCtx;
  final DeviceBuffer partialMax;
  final DeviceBuffer partialSum;
  final DeviceBuffer ctx;

  /** Allocates scratch for {@code heads} heads of latent rank {@code kvLora}. */
  public MlaWorkspace(int maxTokens, int maxSplits, int heads, int kvLora, int ropeDim) {
    this.maxTokens = maxTokens;
    this.maxSplits = maxSplits;
    long rows = (long) maxTokens * heads;
    qLatent = DeviceBuffer.allocate(4L * rows * (kvLora + ropeDim));
    partialCtx = DeviceBuffer.allocate(4L * rows * maxSplits * kvLora);
    partialMax = DeviceBuffer.allocate(4L * rows * maxSplits);
    partialSum = DeviceBuffer.allocate(4L * rows * maxSplits);
    ctx = DeviceBuffer.allocate(4L * rows * kvLora);
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
