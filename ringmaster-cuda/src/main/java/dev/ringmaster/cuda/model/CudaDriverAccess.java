package dev.ringmaster.cuda.model;

import dev.ringmaster.cuda.driver.CudaDriver;
import dev.ringmaster.cuda.driver.CudaStream;
import java.lang.foreign.MemorySegment;

/**
 * The few raw driver calls the model needs on sub-ranges of buffers (offsets, not whole buffers).
 */
final class CudaDriverAccess {
  private CudaDriverAccess() {}

  static void memsetZero(long ptr, long bytes, CudaStream stream) {
    CudaDriver.get().memsetD8Async(ptr, 0, bytes, stream.handle());
  }

  static void copyToDevice(long dst, MemorySegment src, long bytes, CudaStream stream) {
    CudaDriver.get().memcpyHtoDAsync(dst, src, bytes, stream.handle());
  }

  static void copyToHost(MemorySegment dst, long src, long bytes, CudaStream stream) {
    CudaDriver.get().memcpyDtoHAsync(dst, src, bytes, stream.handle());
  }

  static void copyOnDevice(long dst, long src, long bytes, CudaStream stream) {
    CudaDriver.get().memcpyDtoDAsync(dst, src, bytes, stream.handle());
  }

  /** {@code [free, total]} bytes of device memory. */
  static long[] memoryInfo() {
    return CudaDriver.get().memoryInfo();
  }
}
