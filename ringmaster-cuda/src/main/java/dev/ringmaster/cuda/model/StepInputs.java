package dev.ringmaster.cuda.model;

import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.driver.HostBuffer;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The per-step inputs in fixed device buffers (graph replays read them there): token ids,
 * positions, each token's sequence row in the block table and its cache slot, and the block table
 * {@code [tableRows, maxBlocksPerSeq]}, and how many of the step's rows are real (the rest pad a
 * graph bucket). Uploaded from one pinned staging buffer.
 */
final class StepInputs implements AutoCloseable {
  final int maxTokens;
  final int tableRows;
  final int maxBlocksPerSeq;
  final DeviceBuffer ids;
  final DeviceBuffer positions;
  final DeviceBuffer tokenSeq;
  final DeviceBuffer slots;
  final DeviceBuffer blockTable;

  /** One int: the step's real rows; rows at or past it are a graph bucket's padding. */
  final DeviceBuffer liveTokens;

  private final HostBuffer staging;

  StepInputs(int maxTokens, int tableRows, int maxBlocksPerSeq) {
    this.maxTokens = maxTokens;
    this.tableRows = tableRows;
    this.maxBlocksPerSeq = maxBlocksPerSeq;
    ids = DeviceBuffer.allocate(4L * maxTokens);
    positions = DeviceBuffer.allocate(4L * maxTokens);
    tokenSeq = DeviceBuffer.allocate(4L * maxTokens);
    slots = DeviceBuffer.allocate(4L * maxTokens);
    blockTable = DeviceBuffer.allocate(4L * tableRows * maxBlocksPerSeq);
    liveTokens = DeviceBuffer.allocate(4L);
    staging = HostBuffer.allocate(4L * (4L * maxTokens + (long) tableRows * maxBlocksPerSeq + 1));
  }

  /** Bytes of device memory held. */
  long bytes() {
    return ids.bytes()
        + positions.bytes()
        + tokenSeq.bytes()
        + slots.bytes()
        + blockTable.bytes()
        + liveTokens.bytes();
  }

  /** Zeroes every input: padding rows then name token 0 at position 0 in the padding block. */
  void zero(CudaStream stream) {
    ids.zero(stream);
    positions.zero(stream);
    tokenSeq.zero(stream);
    slots.zero(stream);
    blockTable.zero(stream);
    liveTokens.zero(stream);
  }

  /**
   * Uploads {@code n} tokens' inputs, of which the first {@code live} are real (the rest pad a
   * graph bucket), and, when {@code table} is not null, its first {@code rows} rows of the block
   * table. Waits for earlier work first, as the staging buffer is reused.
   */
  void upload(
      CudaStream stream,
      int n,
      int live,
      int[] idv,
      int[] pos,
      int[] seq,
      int[] slotv,
      int[] table,
      int rows) {
    stream.synchronize();
    MemorySegment s = staging.segment();
    long off = put(stream, s, 0, new int[] {live}, 1, liveTokens.ptr());
    off = put(stream, s, off, idv, n, ids.ptr());
    off = put(stream, s, off, pos, n, positions.ptr());
    off = put(stream, s, off, seq, n, tokenSeq.ptr());
    off = put(stream, s, off, slotv, n, slots.ptr());
    if (table != null) {
      put(stream, s, off, table, rows * maxBlocksPerSeq, blockTable.ptr());
    }
  }

  private static long put(CudaStream stream, MemorySegment s, long off, int[] v, int n, long dst) {
    MemorySegment.copy(v, 0, s, ValueLayout.JAVA_INT, off, n);
    CudaDriverAccess.copyToDevice(dst, s.asSlice(off), 4L * n, stream);
    return off + 4L * n;
  }

  @Override
  public void close() {
    ids.close();
    positions.close();
    tokenSeq.close();
    slots.close();
    blockTable.close();
    liveTokens.close();
    staging.close();
  }
}
