package dev.ringmaster.cuda.testing;

import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.DeviceBuffer;
import java.util.ArrayDeque;
import java.util.Deque;

/** Device buffers of one test body, freed together. */
public final class DeviceScope implements AutoCloseable {
  private final CudaStream stream;
  private final Deque<AutoCloseable> owned = new ArrayDeque<>();

  DeviceScope(CudaStream stream) {
    this.stream = stream;
  }

  /** The stream buffers are copied on. */
  public CudaStream stream() {
    return stream;
  }

  /** A buffer of {@code bytes}, uninitialised. */
  public DeviceBuffer alloc(long bytes) {
    DeviceBuffer b = DeviceBuffer.allocate(bytes);
    owned.push(b);
    return b;
  }

  /** A buffer of {@code n} f32 values, all NaN. */
  public DeviceBuffer poisoned(long n) {
    DeviceBuffer b = alloc(4 * n);
    b.poison(stream);
    return b;
  }

  /** A copy of {@code v} on the device. */
  public DeviceBuffer f32(float[] v) {
    DeviceBuffer b = alloc(4L * v.length);
    b.upload(stream, v);
    return b;
  }

  /** A copy of {@code v} on the device. */
  public DeviceBuffer i32(int[] v) {
    DeviceBuffer b = alloc(4L * v.length);
    b.upload(stream, v);
    return b;
  }

  /** A copy of {@code v} (bf16 bits) on the device. */
  public DeviceBuffer bf16(short[] v) {
    DeviceBuffer b = alloc(2L * v.length);
    b.upload(stream, v);
    return b;
  }

  /** A copy of {@code v} (for example e4m3 codes) on the device. */
  public DeviceBuffer u8(byte[] v) {
    DeviceBuffer b = alloc(Math.max(1, v.length));
    b.upload(stream, v);
    return b;
  }

  /** A copy of {@code v} on the device. */
  public DeviceBuffer u64(long[] v) {
    DeviceBuffer b = alloc(8L * v.length);
    b.upload(stream, v);
    return b;
  }

  /** Waits for the stream and reads {@code n} f32 values. */
  public float[] read(DeviceBuffer b, int n) {
    return b.downloadFloats(stream, n);
  }

  /** Waits for the stream and reads {@code n} bytes. */
  public byte[] readBytes(DeviceBuffer b, int n) {
    return b.downloadBytes(stream, n);
  }

  /** Waits for the stream and reads {@code n} 16-bit values. */
  public short[] readShorts(DeviceBuffer b, int n) {
    return b.downloadShorts(stream, n);
  }

  /** Waits for the stream and reads {@code n} i32 values. */
  public int[] readInts(DeviceBuffer b, int n) {
    return b.downloadInts(stream, n);
  }

  @Override
  public void close() {
    stream.synchronize();
    while (!owned.isEmpty()) {
      try {
        owned.pop().close();
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    }
  }
}
