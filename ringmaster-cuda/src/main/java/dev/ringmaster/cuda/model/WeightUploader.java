package dev.ringmaster.cuda.model;

import dev.ringmaster.backend.DType;
import dev.ringmaster.backend.cpu.Numerics;
import dev.ringmaster.cuda.driver.CudaDriver;
import dev.ringmaster.cuda.driver.CudaEvent;
import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.driver.HostBuffer;
import dev.ringmaster.cuda.kernels.Nvfp4Layout;
import dev.ringmaster.model.weights.TensorView;
import dev.ringmaster.model.weights.WeightStore;
import dev.ringmaster.util.Progress;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

/**
 * Copies checkpoint tensors from the memory-mapped files to the device: matrices as bf16 (f32 and
 * f16 are rounded on the host, chunk by chunk), norms and biases as f32. Two pinned staging buffers
 * alternate so the host fills one while the other is on its way. GPU thread only.
 */
final class WeightUploader implements AutoCloseable {
  private static final long CHUNK_BYTES = 32L << 20;

  private final WeightStore store;
  private final CudaStream stream;
  private final CudaDriver driver = CudaDriver.get();
  private final HostBuffer[] staging = {
    HostBuffer.allocate(CHUNK_BYTES), HostBuffer.allocate(CHUNK_BYTES)
  };
  private final CudaEvent[] copied = {CudaEvent.create(), CudaEvent.create()};
  private final boolean[] inFlight = new boolean[2];
  private final List<DeviceBuffer> owned = new ArrayList<>();
  private final Progress progress;
  private int next;
  private long deviceBytes;

  WeightUploader(WeightStore store, CudaStream stream, long expectedBytes, boolean report) {
    this.store = store;
    this.stream = stream;
    this.progress = Progress.startIf(report, "uploading weights", expectedBytes, "B");
  }

  /** The checkpoint being read. */
  WeightStore store() {
    return store;
  }

  /** Every buffer allocated so far (the caller owns them). */
  List<DeviceBuffer> buffers() {
    return owned;
  }

  /** Bytes allocated on the device so far. */
  long deviceBytes() {
    return deviceBytes;
  }

  /** Allocates a device buffer the caller fills with {@link #bf16Into} (for stacked experts). */
  DeviceBuffer allocate(long bytes) {
    DeviceBuffer b = DeviceBuffer.allocate(bytes);
    owned.add(b);
    deviceBytes += bytes;
    return b;
  }

  /** Uploads tensor {@code name} of shape {@code [rows, cols]} as a bf16 matrix. */
  DeviceMatrix matrix(String name, int rows, int cols) {
    TensorView t = store.require(name, rows, cols);
    DeviceBuffer b = allocate(2L * rows * cols);
    bf16Into(b, 0, t, 0, (long) rows * cols);
    return new DeviceMatrix(b.ptr(), rows, cols);
  }

  /** Uploads tensor {@code name} of {@code n} elements as f32. */
  long vector(String name, int n) {
    DeviceBuffer b = allocate(4L * n);
    f32Into(b, 0, store.require(name, n), 0, n);
    return b.ptr();
  }

  /**
   * Rows {@code [r0, r0 + rn)} of the {@code [rows, cols]} tensor {@code name} as a bf16 matrix (a
   * column-parallel layer's share of its output features).
   */
  DeviceMatrix matrixRows(String name, int rows, int cols, int r0, int rn) {
    TensorView t = store.require(name, rows, cols);
    DeviceBuffer b = allocate(2L * rn * cols);
    bf16Into(b, 0, t, (long) r0 * cols, (long) rn * cols);
    return new DeviceMatrix(b.ptr(), rn, cols);
  }

  /**
   * Columns {@code [c0, c0 + cn)} of the {@code [rows, cols]} tensor {@code name} as a bf16 matrix
   * (a row-parallel layer's share of its input features).
   */
  DeviceMatrix matrixCols(String name, int rows, int cols, int c0, int cn) {
    TensorView t = store.require(name, rows, cols);
    DeviceBuffer b = allocate(2L * rows * cn);
    bf16ColsInto(b, 0, t, 0, rows, cols, c0, cn);
    return new DeviceMatrix(b.ptr(), rows, cn);
  }

  /** Elements {@code [from, from + n)} of the vector {@code name} (of {@code total}) as f32. */
  long vectorSlice(String name, int total, int from, int n) {
    DeviceBuffer b = allocate(4L * n);
    f32Into(b, 0, store.require(name, total), from, n);
    return b.ptr();
  }

  /**
   * Uploads the vectors {@code names} (each of {@code n} elements; a missing one as zeros) one
   * after another as f32, or returns 0 when none exists.
   */
  long vectorsOrZeros(int n, String... names) {
    return vectorSlicesOrZeros(n, 0, n, names);
  }

  /**
   * Like {@link #vectorsOrZeros} for elements {@code [from, from + n)} of each vector of {@code
   * total} elements (a column-parallel layer's bias share).
   */
  long vectorSlicesOrZeros(int total, int from, int n, String... names) {
    boolean any = false;
    for (String name : names) {
      any |= store.contains(name);
    }
    if (!any) {
      return 0;
    }
    DeviceBuffer b = allocate(4L * n * names.length);
    for (int i = 0; i < names.length; i++) {
      if (store.contains(names[i])) {
        f32Into(b, 4L * n * i, store.require(names[i], total), from, n);
      } else {
        CudaDriverAccess.memsetZero(b.ptr(4L * n * i), 4L * n, stream);
      }
    }
    return b.ptr();
  }

  private void f32Into(DeviceBuffer b, long offset, TensorView t, int from, int n) {
    long done = 0;
    while (done < n) {
      int count = (int) Math.min(n - done, CHUNK_BYTES / 4);
      MemorySegment host = slot();
      for (int i = 0; i < count; i++) {
        host.setAtIndex(
            ValueLayout.JAVA_FLOAT, i, Numerics.load(t.data(), t.dtype(), from + done + i));
      }
      send(b.ptr(offset + 4 * done), 4L * count, (long) count * t.dtype().bytes());
      done += count;
    }
  }

  /**
   * Writes {@code count} elements of {@code t} from element {@code from} as bf16 at byte {@code
   * offset} of {@code dst}.
   */
  void bf16Into(DeviceBuffer dst, long offset, TensorView t, long from, long count) {
    long done = 0;
    while (done < count) {
      long n = Math.min(count - done, CHUNK_BYTES / 2);
      MemorySegment host = slot();
      if (t.dtype() == DType.BF16) {
        MemorySegment.copy(t.data(), 2 * (from + done), host, 0, 2 * n);
      } else {
        for (long i = 0; i < n; i++) {
          float v = Numerics.load(t.data(), t.dtype(), from + done + i);
          host.setAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i, Numerics.floatToBf16(v));
        }
      }
      send(dst.ptr(offset + 2 * done), 2 * n, n * t.dtype().bytes());
      done += n;
    }
  }

  /**
   * Writes columns {@code [c0, c0 + cn)} of the {@code [rows, cols]} matrix that starts at element
   * {@code base} of {@code t} (a 3D tensor's slice, or 0) as a bf16 {@code [rows, cn]} matrix at
   * byte {@code offset} of {@code dst}. Rows are packed into the staging buffer so that a narrow
   * slice still moves in large copies.
   */
  void bf16ColsInto(
      DeviceBuffer dst, long offset, TensorView t, long base, int rows, int cols, int c0, int cn) {
    if (c0 == 0 && cn == cols) {
      bf16Into(dst, offset, t, base, (long) rows * cols);
      return;
    }
    if (2L * cn > CHUNK_BYTES) {
      throw new IllegalArgumentException(t.name() + ": a row slice of " + cn + " is too wide");
    }
    int perChunk = (int) (CHUNK_BYTES / (2L * cn));
    for (int r0 = 0; r0 < rows; r0 += perChunk) {
      int count = Math.min(perChunk, rows - r0);
      MemorySegment host = slot();
      for (int i = 0; i < count; i++) {
        long src = base + (long) (r0 + i) * cols + c0;
        if (t.dtype() == DType.BF16) {
          MemorySegment.copy(t.data(), 2 * src, host, 2L * i * cn, 2L * cn);
        } else {
          for (int c = 0; c < cn; c++) {
            float v = Numerics.load(t.data(), t.dtype(), src + c);
            host.setAtIndex(
                ValueLayout.JAVA_SHORT_UNALIGNED, (long) i * cn + c, Numerics.floatToBf16(v));
          }
        }
      }
      send(dst.ptr(offset + 2L * r0 * cn), 2L * count * cn, (long) count * cn * t.dtype().bytes());
    }
  }

  /**
   * Copies bytes {@code [from, from + n)} of {@code src} unchanged to byte {@code offset} of {@code
   * dst} (FP8 codes and their f32 scales, uploaded as the checkpoint stores them).
   */
  void bytesInto(DeviceBuffer dst, long offset, MemorySegment src, long from, long n) {
    long done = 0;
    while (done < n) {
      long count = Math.min(n - done, CHUNK_BYTES);
      MemorySegment host = slot();
      MemorySegment.copy(src, from + done, host, 0, count);
      send(dst.ptr(offset + done), count, count);
      done += count;
    }
  }

  /**
   * Copies bytes {@code [b0, b0 + bn)} of each of the {@code rows} rows of {@code rowBytes} bytes
   * in {@code src} to byte {@code offset} of {@code dst}, packed ({@code [rows, bn]}): a column
   * slice of FP8 codes or scales, rows gathered in the staging buffer so it moves in large copies.
   */
  void byteColsInto(
      DeviceBuffer dst,
      long offset,
      MemorySegment src,
      long rows,
      long rowBytes,
      long b0,
      long bn) {
    if (b0 == 0 && bn == rowBytes) {
      bytesInto(dst, offset, src, 0, rows * rowBytes);
      return;
    }
    if (bn > CHUNK_BYTES) {
      throw new IllegalArgumentException("a row slice of " + bn + " bytes is too wide");
    }
    long perChunk = CHUNK_BYTES / bn;
    for (long r0 = 0; r0 < rows; r0 += perChunk) {
      long count = Math.min(perChunk, rows - r0);
      MemorySegment host = slot();
      for (long i = 0; i < count; i++) {
        MemorySegment.copy(src, (r0 + i) * rowBytes + b0, host, i * bn, bn);
      }
      send(dst.ptr(offset + r0 * bn), count * bn, count * bn);
    }
  }

  /**
   * {@link #byteColsInto} for packed NVFP4 codes ({@code rowBytes} and the slice {@code [b0, b0 +
   * bn)} multiples of 4 bytes), each 32-bit word reordered into the device order of {@link
   * Nvfp4Layout} on the way.
   */
  void fp4CodesInto(
      DeviceBuffer dst,
      long offset,
      MemorySegment src,
      long rows,
      long rowBytes,
      long b0,
      long bn) {
    if (bn % 4 != 0 || b0 % 4 != 0) {
      throw new IllegalArgumentException("NVFP4 code slices come in 4-byte words");
    }
    if (bn > CHUNK_BYTES) {
      throw new IllegalArgumentException("a row slice of " + bn + " bytes is too wide");
    }
    long perChunk = CHUNK_BYTES / bn;
    for (long r0 = 0; r0 < rows; r0 += perChunk) {
      long count = Math.min(perChunk, rows - r0);
      MemorySegment host = slot();
      if (b0 == 0 && bn == rowBytes) {
        MemorySegment.copy(src, r0 * rowBytes, host, 0, count * bn);
      } else {
        for (long i = 0; i < count; i++) {
          MemorySegment.copy(src, (r0 + i) * rowBytes + b0, host, i * bn, bn);
        }
      }
      Nvfp4Layout.toDeviceOrder(host, 0, count * bn);
      send(dst.ptr(offset + r0 * bn), count * bn, count * bn);
    }
  }

  /** Uploads {@code values} as f32 at byte {@code offset} of {@code dst}. */
  void floatsInto(DeviceBuffer dst, long offset, float[] values) {
    if (4L * values.length > CHUNK_BYTES) {
      throw new IllegalArgumentException(values.length + " floats exceed one staging buffer");
    }
    MemorySegment host = slot();
    MemorySegment.copy(values, 0, host, ValueLayout.JAVA_FLOAT, 0, values.length);
    send(dst.ptr(offset), 4L * values.length, 4L * values.length);
  }

  /**
   * Uploads {@code values} as bf16 (rounded to nearest even) at byte {@code offset} of {@code dst}.
   */
  void bf16Into(DeviceBuffer dst, long offset, float[] values) {
    long done = 0;
    while (done < values.length) {
      int n = (int) Math.min(values.length - done, CHUNK_BYTES / 2);
      MemorySegment host = slot();
      for (int i = 0; i < n; i++) {
        host.setAtIndex(
            ValueLayout.JAVA_SHORT_UNALIGNED, i, Numerics.floatToBf16(values[(int) done + i]));
      }
      send(dst.ptr(offset + 2 * done), 2L * n, 2L * n);
      done += n;
    }
  }

  /** The next staging buffer, once the copy that last read it has finished. */
  private MemorySegment slot() {
    if (inFlight[next]) {
      copied[next].synchronize();
      inFlight[next] = false;
    }
    return staging[next].segment();
  }

  private void send(long dst, long bytes, long sourceBytes) {
    driver.memcpyHtoDAsync(dst, staging[next].segment(), bytes, stream.handle());
    copied[next].record(stream);
    inFlight[next] = true;
    next ^= 1;
    progress.step(sourceBytes);
  }

  @Override
  public void close() {
    stream.synchronize();
    progress.close();
    for (HostBuffer h : staging) {
      h.close();
    }
    for (CudaEvent e : copied) {
      e.close();
    }
  }
}
