package dev.ringmaster.cuda.kernels;

import dev.ringmaster.cuda.driver.CudaDriver;
import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.driver.HostBuffer;
import dev.ringmaster.runtime.sampling.SampledTokens;
import dev.ringmaster.runtime.sampling.SamplingBatch;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The fixed device buffers {@link DeviceSampler} reads and writes, with a pinned host mirror: a
 * graph captures their addresses once, and {@link #upload} rewrites their contents before each
 * replay. Capacities are fixed at construction ({@link SamplingCapacity}): rows, seen-token and
 * bias entries over all rows, alternatives per row, and the vocabulary the allowed-token mask slots
 * cover.
 *
 * <p>Device layout (one allocation; row arrays have {@code maxRows} entries): {@code seeds} u64,
 * {@code steps} u64, {@code temperature} f32, {@code topK} i32, {@code topP} f32, {@code minP} f32,
 * {@code repetition} f32, {@code frequency} f32, {@code presence} f32, {@code topLogprobs} i32,
 * {@code seenStart} i32[maxRows + 1], {@code biasStart} i32[maxRows + 1], {@code maskSlot} i32 (-1:
 * no mask); then {@code seen} int2[maxSeen] (token, output count), {@code bias} int2[maxBias]
 * (token, f32 bits), {@code masks} u32[maxRows * maskStride] ({@link AllowedTokenMasks}); then the
 * outputs {@code tokens} i32, {@code logprobs} f32, {@code topIds} i32[maxRows * topStride], {@code
 * topLogprobs} f32[maxRows * topStride].
 *
 * <p>Per step the copy is the row arrays ({@code 60 * maxRows + 8} bytes), the step's seen and bias
 * entries, and one mask slot per distinct mask ({@code 4 * maskStride} bytes: 16,160 at a
 * vocabulary of 129,280), all from the pinned mirror on the step's stream.
 *
 * <p>Use from the GPU's thread; the host mirror is rewritten by the next upload, so download the
 * results of one step (which waits for the stream) before uploading the next.
 */
public final class SamplingBuffers implements AutoCloseable {
  private final SamplingCapacity capacity;
  private final int maxRows;
  private final int topStride;
  private final int maskStride;
  private final long rowBytes;
  private final long seenAt;
  private final long biasAt;
  private final long masksAt;
  private final long outAt;
  private final long outBytes;
  private final DeviceBuffer device;
  private final HostBuffer host;
  private final MemorySegment h;
  private final AllowedTokenMasks masks = new AllowedTokenMasks();
  private int uploadedRows;
  private int uploadedMaskSlots;
  private boolean anyLogprobs;

  /**
   * Buffers for up to {@code maxRows} rows and the given entry capacities, without mask slots
   * (batches with allowed-token masks are refused).
   */
  public SamplingBuffers(int maxRows, int maxSeen, int maxBias, int topStride) {
    this(new SamplingCapacity(maxRows, maxSeen, maxBias, topStride, 0));
  }

  /** Buffers of the given capacities, with one mask slot per row when masks are enabled. */
  public SamplingBuffers(SamplingCapacity capacity) {
    this.capacity = capacity;
    this.maxRows = capacity.maxRows();
    this.topStride = capacity.topStride();
    this.maskStride = capacity.maskStrideWords();
    this.rowBytes = align(60L * maxRows + 8);
    this.seenAt = rowBytes;
    this.biasAt = seenAt + align(8L * capacity.maxSeen());
    this.masksAt = biasAt + align(8L * capacity.maxBias());
    this.outAt = masksAt + align(4L * maxRows * maskStride);
    this.outBytes = 8L * maxRows + 8L * maxRows * topStride;
    this.device = DeviceBuffer.allocate(outAt + outBytes);
    this.host = HostBuffer.allocate(outAt + outBytes);
    this.h = host.segment();
  }

  private static long align(long n) {
    return (n + 15) & ~15L;
  }

  /** What the buffers hold. */
  public SamplingCapacity capacity() {
    return capacity;
  }

  /** Rows the buffers hold at most. */
  public int maxRows() {
    return maxRows;
  }

  /** Alternatives per row in the top-logprob outputs. */
  public int topStride() {
    return topStride;
  }

  /**
   * Copies {@code batch} into the device buffers (queued on {@code stream}), padding rows {@code
   * [batch.rows(), rows)} as greedy rows without logprobs, so a graph captured for {@code rows}
   * rows serves smaller batches.
   *
   * @throws IllegalArgumentException when the batch exceeds a capacity (naming which)
   */
  public void upload(SamplingBatch batch, int rows, CudaStream stream) {
    int n = batch.rows();
    if (n > rows || rows > maxRows) {
      throw new IllegalArgumentException(
          "a sampling batch of "
              + n
              + " rows padded to "
              + rows
              + " does not fit buffers of "
              + maxRows
              + " rows");
    }
    if (batch.seenTokenEntries() > capacity.maxSeen()) {
      throw new IllegalArgumentException(
          batch.seenTokenEntries()
              + " seen-token entries exceed the sampling buffers' "
              + capacity.maxSeen()
              + "; allocate larger buffers or lower the number of penalised rows");
    }
    if (batch.biasEntries() > capacity.maxBias()) {
      throw new IllegalArgumentException(
          batch.biasEntries()
              + " logit bias entries exceed the sampling buffers' "
              + capacity.maxBias());
    }
    if (batch.hasAllowedTokenMasks() && capacity.maskVocab() == 0) {
      throw new IllegalArgumentException(
          "the batch has allowed-token masks but these sampling buffers have no mask slots;"
              + " allocate them with a mask vocabulary");
    }
    if (batch.maxTopLogprobs() > topStride) {
      throw new IllegalArgumentException(
          batch.maxTopLogprobs() + " top logprobs exceed the sampling buffers' " + topStride);
    }
    anyLogprobs = false;
    for (int r = 0; r < rows; r++) {
      boolean real = r < n;
      h.set(ValueLayout.JAVA_LONG_UNALIGNED, 8L * r, real ? batch.seed()[r] : 0L);
      h.set(ValueLayout.JAVA_LONG_UNALIGNED, 8L * (maxRows + r), real ? batch.step()[r] : 0L);
      setF(0, r, real ? batch.temperature()[r] : 0f);
      setI(1, r, real ? batch.topK()[r] : 0);
      setF(2, r, real ? batch.topP()[r] : 1f);
      setF(3, r, real ? batch.minP()[r] : 0f);
      setF(4, r, real ? batch.repetitionPenalty()[r] : 1f);
      setF(5, r, real ? batch.frequencyPenalty()[r] : 0f);
      setF(6, r, real ? batch.presencePenalty()[r] : 0f);
      int top = real ? batch.topLogprobs()[r] : -1;
      anyLogprobs |= top >= 0;
      setI(7, r, top);
    }
    int seen = batch.seenTokenEntries();
    int bias = batch.biasEntries();
    for (int r = 0; r <= rows; r++) {
      int rr = Math.min(r, n);
      setI(8, r, batch.seenStart()[rr]);
      setBiasStart(r, batch.biasStart()[rr]);
    }
    for (int e = 0; e < seen; e++) {
      h.set(ValueLayout.JAVA_INT_UNALIGNED, seenAt + 8L * e, batch.seenTokens()[e]);
      h.set(ValueLayout.JAVA_INT_UNALIGNED, seenAt + 8L * e + 4, batch.seenCounts()[e]);
    }
    for (int e = 0; e < bias; e++) {
      h.set(ValueLayout.JAVA_INT_UNALIGNED, biasAt + 8L * e, batch.biasTokens()[e]);
      h.set(ValueLayout.JAVA_FLOAT_UNALIGNED, biasAt + 8L * e + 4, batch.biasValues()[e]);
    }
    // Waits for masks still on a mask thread: each is complete before it is staged.
    int slots = masks.pack(batch, rows, h, maskSlotAt(), h.asSlice(0, outAt), masksAt, maskStride);
    CudaDriver d = CudaDriver.get();
    d.memcpyHtoDAsync(device.ptr(), h, rowBytes, stream.handle());
    if (seen > 0) {
      d.memcpyHtoDAsync(device.ptr(seenAt), h.asSlice(seenAt), 8L * seen, stream.handle());
    }
    if (bias > 0) {
      d.memcpyHtoDAsync(device.ptr(biasAt), h.asSlice(biasAt), 8L * bias, stream.handle());
    }
    if (slots > 0) {
      d.memcpyHtoDAsync(
          device.ptr(masksAt), h.asSlice(masksAt), 4L * slots * maskStride, stream.handle());
    }
    uploadedRows = rows;
    uploadedMaskSlots = slots;
  }

  /** Mask slots the last upload filled (distinct masks of its rows). */
  public int uploadedMaskSlots() {
    return uploadedMaskSlots;
  }

  // Row array a (0 temperature .. 7 topLogprobs, 8 seenStart) after the two u64 arrays.
  private void setF(int a, int r, float v) {
    h.set(ValueLayout.JAVA_FLOAT_UNALIGNED, 16L * maxRows + 4L * (a * maxRows + r), v);
  }

  private void setI(int a, int r, int v) {
    h.set(ValueLayout.JAVA_INT_UNALIGNED, 16L * maxRows + 4L * (a * maxRows + r), v);
  }

  private void setBiasStart(int r, int v) {
    h.set(ValueLayout.JAVA_INT_UNALIGNED, biasStartAt() + 4L * r, v);
  }

  private long arrayAt(int a) {
    return 16L * maxRows + 4L * a * maxRows;
  }

  private long biasStartAt() {
    return arrayAt(8) + 4L * (maxRows + 1);
  }

  private long maskSlotAt() {
    return biasStartAt() + 4L * (maxRows + 1);
  }

  /**
   * Waits for {@code stream} and returns the first {@code rows} rows' tokens and logprobs (the rows
   * of the batch last uploaded; padding rows are left out).
   *
   * @throws IllegalArgumentException when a row's allowed-token mask allows no token (as the CPU
   *     sampler refuses it)
   */
  public SampledTokens download(CudaStream stream, int rows) {
    if (rows > uploadedRows) {
      throw new IllegalArgumentException(
          rows + " rows requested but " + uploadedRows + " were uploaded");
    }
    CudaDriver d = CudaDriver.get();
    long bytes = anyLogprobs ? outBytes : 4L * rows;
    d.memcpyDtoHAsync(h.asSlice(outAt), device.ptr(outAt), bytes, stream.handle());
    stream.synchronize();
    int[] tokens = new int[rows];
    float[] lp = new float[rows];
    int[] ids = new int[rows * topStride];
    float[] tops = new float[rows * topStride];
    MemorySegment.copy(h, ValueLayout.JAVA_INT_UNALIGNED, outAt, tokens, 0, rows);
    for (int r = 0; r < rows; r++) {
      if (tokens[r] < 0) {
        throw new IllegalArgumentException("row " + r + ": its allowed-token mask allows no token");
      }
    }
    if (anyLogprobs) {
      MemorySegment.copy(h, ValueLayout.JAVA_FLOAT_UNALIGNED, outAt + 4L * maxRows, lp, 0, rows);
      long idsAt = outAt + 8L * maxRows;
      long topsAt = idsAt + 4L * maxRows * topStride;
      MemorySegment.copy(h, ValueLayout.JAVA_INT_UNALIGNED, idsAt, ids, 0, rows * topStride);
      MemorySegment.copy(h, ValueLayout.JAVA_FLOAT_UNALIGNED, topsAt, tops, 0, rows * topStride);
    } else {
      java.util.Arrays.fill(lp, Float.NaN);
    }
    return new SampledTokens(tokens, lp, topStride, ids, tops);
  }

  /** Device address of row array {@code a} (0 temperature .. 7 topLogprobs, 8 seenStart). */
  long rowArray(int a) {
    return device.ptr(arrayAt(a));
  }

  /** Device address of the per-row seeds (u64). */
  public long seeds() {
    return device.ptr();
  }

  /** Device address of the per-row step counters (u64). */
  public long steps() {
    return device.ptr(8L * maxRows);
  }

  /** Device address of the bias CSR starts. */
  public long biasStart() {
    return device.ptr(biasStartAt());
  }

  /** Device address of the per-row mask slots (i32, -1 without a mask). */
  public long maskSlots() {
    return device.ptr(maskSlotAt());
  }

  /** Device address of the mask slots' words. */
  public long masks() {
    return device.ptr(masksAt);
  }

  /** 32-bit words per mask slot. */
  public int maskStride() {
    return maskStride;
  }

  /** Device address of the seen-token entries. */
  public long seen() {
    return device.ptr(seenAt);
  }

  /** Device address of the bias entries. */
  public long bias() {
    return device.ptr(biasAt);
  }

  /** Device address of the output tokens (i32 per row). */
  public long outTokens() {
    return device.ptr(outAt);
  }

  /** Device address of the output logprobs (f32 per row). */
  public long outLogprobs() {
    return device.ptr(outAt + 4L * maxRows);
  }

  /** Device address of the output alternative ids (i32, topStride per row). */
  public long outTopIds() {
    return device.ptr(outAt + 8L * maxRows);
  }

  /** Device address of the output alternative logprobs (f32, topStride per row). */
  public long outTopLogprobs() {
    return device.ptr(outAt + 8L * maxRows + 4L * maxRows * topStride);
  }

  @Override
  public void close() {
    device.close();
    host.close();
  }
}
