package dev.ringmaster.cuda.kernels;

import dev.ringmaster.cuda.driver.CudaDriver;
import dev.ringmaster.cuda.driver.DeviceBuffer;

/**
 * Device scratch of the routed-expert kernels for up to {@code maxTokens} tokens: the expert-sorted
 * pair lists and the per-pair intermediate and output rows. Fixed buffers, so a captured graph can
 * reuse them. The intermediate {@code h} is f32 in pair order for the CUDA-core kernels and bf16 in
 * expert-sorted order (the first half of the buffer) for the tensor-core ones.
 */
public final class MoeWorkspace implements AutoCloseable {
  final int maxTokens;
  final int numExperts;
  final int topK;
  final DeviceBuffer offsets;
  final DeviceBuffer sortedPairs;
  final DeviceBuffer activeExperts;
  final DeviceBuffer activeCount;
  final DeviceBuffer h;
  final DeviceBuffer y;
  final DeviceBuffer ticket;

  /** Allocates scratch for the given layer shape. */
  public MoeWorkspace(int maxTokens, int numExperts, int topK, int hidden, int inter) {
    this.maxTokens = maxTokens;
    this.numExperts = numExperts;
    this.topK = topK;
    long pairs = (long) maxTokens * topK;
    offsets = DeviceBuffer.allocate(4L * (numExperts + 1));
    sortedPairs = DeviceBuffer.allocate(4L * pairs);
    activeExperts = DeviceBuffer.allocate(4L * numExperts);
    activeCount = DeviceBuffer.allocate(4);
    h = DeviceBuffer.allocate(4L * pairs * inter);
    y = DeviceBuffer.allocate(4L * pairs * hidden);
    // rm_router_route's block counter: zero before its first launch, reset by each launch.
    ticket = DeviceBuffer.allocate(4);
    CudaDriver driver = CudaDriver.get();
    driver.memsetD8Async(ticket.ptr(), 0, 4, 0L);
    driver.streamSynchronize(0L);
  }

  /** Device pointer of the expert offsets {@code [E + 1]} (i32) after an align. */
  public long offsetsPtr() {
    return offsets.ptr();
  }

  /** Device pointer of the expert-sorted pair ids {@code [pairs]} (i32) after an align. */
  public long sortedPairsPtr() {
    return sortedPairs.ptr();
  }

  /** Device pointer of the per-pair output rows {@code [pairs, hidden]} (f32). */
  public long pairRowsPtr() {
    return y.ptr();
  }

  /** Bytes of device memory held. */
  public long bytes() {
    return offsets.bytes()
        + sortedPairs.bytes()
        + activeExperts.bytes()
        + activeCount.bytes()
        + h.bytes()
        + y.bytes()
        + ticket.bytes();
  }

  @Override
  public void close() {
    offsets.close();
    sortedPairs.close();
    activeExperts.close();
    activeCount.close();
    h.close();
    y.close();
    ticket.close();
  }
}
