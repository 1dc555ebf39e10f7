package dev.ringmaster.cuda.driver;

import java.lang.foreign.MemorySegment;

/**
 * Page-locked host memory ({@code cuMemHostAlloc}): the only host memory an asynchronous copy can
 * read or write while the CPU moves on.
 */
public final class HostBuffer implements AutoCloseable {
  private final CudaDriver driver;
  private final MemorySegment segment;
  private boolean freed;

  private HostBuffer(CudaDriver driver, MemorySegment segment) {
    this.driver = driver;
    this.segment = segment;
  }

  /** Allocates {@code bytes} of pinned host memory in the current context. */
  public static HostBuffer allocate(long bytes) {
    CudaDriver d = CudaDriver.get();
    return new HostBuffer(d, d.memHostAlloc(bytes));
  }

  /** The memory, valid until {@link #close()}. */
  public MemorySegment segment() {
    return segment;
  }

  /** Queues a copy of the first {@code bytes} to device memory. */
  public void copyTo(DeviceBuffer dst, long bytes, CudaStream stream) {
    driver.memcpyHtoDAsync(dst.ptr(), segment, bytes, stream.handle());
  }

  /** Queues a copy of {@code bytes} from device memory into the start of this buffer. */
  public void copyFrom(DeviceBuffer src, long bytes, CudaStream stream) {
    driver.memcpyDtoHAsync(segment, src.ptr(), bytes, stream.handle());
  }

  @Override
  public void close() {
    if (!freed) {
      freed = true;
      driver.memFreeHost(segment);
    }
  }
}
