package dev.ringmaster.cuda.driver;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * A block of device memory: a 64-bit device pointer and its size. Copies to and from Java arrays go
 * through a temporary native buffer and wait for the stream, so they suit setup and tests; the hot
 * path copies from pinned {@link HostBuffer}s.
 */
public final class DeviceBuffer implements AutoCloseable {
  private final CudaDriver driver;
  private final long ptr;
  private final long bytes;
  private boolean freed;

  private DeviceBuffer(CudaDriver driver, long ptr, long bytes) {
    this.driver = driver;
    this.ptr = ptr;
    this.bytes = bytes;
  }

  /** Allocates {@code bytes} of device memory in the current context. */
  public static DeviceBuffer allocate(long bytes) {
    CudaDriver d = CudaDriver.get();
    return new DeviceBuffer(d, d.memAlloc(bytes), bytes);
  }

  /** The device pointer. */
  public long ptr() {
    return ptr;
  }

  /** The device pointer {@code offsetBytes} into the buffer. */
  public long ptr(long offsetBytes) {
    if (offsetBytes < 0 || offsetBytes > bytes) {
      throw new IndexOutOfBoundsException(offsetBytes + " outside " + bytes + " bytes");
    }
    return ptr + offsetBytes;
  }

  /** Size in bytes. */
  public long bytes() {
    return bytes;
  }

  /** Fills the buffer with f32 NaN, so that any element a kernel fails to write shows up. */
  public void poison(CudaStream stream) {
    driver.memsetD32Async(ptr, 0x7fc00000, bytes / 4, stream.handle());
  }

  /** Fills the buffer with zero bytes. */
  public void zero(CudaStream stream) {
    driver.memsetD8Async(ptr, 0, bytes, stream.handle());
  }

  /** Copies {@code src} into the start of the buffer and waits for the stream. */
  public void upload(CudaStream stream, float[] src) {
    uploadSegment(stream, MemorySegment.ofArray(src));
  }

  /** Copies {@code src} into the start of the buffer and waits for the stream. */
  public void upload(CudaStream stream, int[] src) {
    uploadSegment(stream, MemorySegment.ofArray(src));
  }

  /** Copies {@code src} (for example bf16 bits) into the start of the buffer and waits. */
  public void upload(CudaStream stream, short[] src) {
    uploadSegment(stream, MemorySegment.ofArray(src));
  }

  /** Copies {@code src} (for example e4m3 codes) into the start of the buffer and waits. */
  public void upload(CudaStream stream, byte[] src) {
    uploadSegment(stream, MemorySegment.ofArray(src));
  }

  /** Copies {@code src} into the start of the buffer and waits for the stream. */
  public void upload(CudaStream stream, long[] src) {
    uploadSegment(stream, MemorySegment.ofArray(src));
  }

  private void uploadSegment(CudaStream stream, MemorySegment heap) {
    checkSize(heap.byteSize());
    try (Arena a = Arena.ofConfined()) {
      MemorySegment tmp = a.allocate(heap.byteSize(), 16);
      tmp.copyFrom(heap);
      driver.memcpyHtoDAsync(ptr, tmp, heap.byteSize(), stream.handle());
      stream.synchronize();
    }
  }

  /** Waits for the stream, then returns the first {@code n} f32 values. */
  public float[] downloadFloats(CudaStream stream, int n) {
    float[] out = new float[n];
    download(stream, MemorySegment.ofArray(out), ValueLayout.JAVA_FLOAT.byteSize() * n);
    return out;
  }

  /** Waits for the stream, then returns the first {@code n} i32 values. */
  public int[] downloadInts(CudaStream stream, int n) {
    int[] out = new int[n];
    download(stream, MemorySegment.ofArray(out), 4L * n);
    return out;
  }

  /** Waits for the stream, then returns the first {@code n} bytes. */
  public byte[] downloadBytes(CudaStream stream, int n) {
    byte[] out = new byte[n];
    download(stream, MemorySegment.ofArray(out), n);
    return out;
  }

  /** Waits for the stream, then returns the first {@code n} 16-bit values. */
  public short[] downloadShorts(CudaStream stream, int n) {
    short[] out = new short[n];
    download(stream, MemorySegment.ofArray(out), 2L * n);
    return out;
  }

  private void download(CudaStream stream, MemorySegment heap, long n) {
    checkSize(n);
    try (Arena a = Arena.ofConfined()) {
      MemorySegment tmp = a.allocate(Math.max(n, 1), 16);
      driver.memcpyDtoHAsync(tmp, ptr, n, stream.handle());
      stream.synchronize();
      heap.copyFrom(tmp.asSlice(0, n));
    }
  }

  private void checkSize(long n) {
    if (n > bytes) {
      throw new IllegalArgumentException(n + " bytes do not fit a buffer of " + bytes);
    }
  }

  @Override
  public void close() {
    if (!freed) {
      freed = true;
      driver.memFree(ptr);
    }
  }
}
