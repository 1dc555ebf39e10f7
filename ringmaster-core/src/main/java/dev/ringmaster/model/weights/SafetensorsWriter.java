package dev.ringmaster.model.weights;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;

/**
 * Writes a safetensors file tensor by tensor, streaming: the header is computed from the specs
 * first, then each tensor's bytes are produced in chunks by a {@link DataSource}, so a file larger
 * than the heap can be written.
 */
public final class SafetensorsWriter {
  private static final int CHUNK = 8 << 20;

  /** Slices of a chunk filled in parallel (each a multiple of 8 bytes, so whole elements). */
  private static final int SLICES = 16;

  /** Produces the bytes of one tensor, chunk by chunk. */
  public interface DataSource {
    /**
     * Fills {@code out} (little-endian, {@code out.remaining()} bytes) with the tensor's bytes
     * starting at byte {@code offset}. Called from several threads at once for disjoint ranges.
     */
    void fill(TensorSpec spec, long offset, ByteBuffer out);
  }

  private SafetensorsWriter() {}

  /**
   * Writes {@code specs} to {@code file}.
   *
   * @param onBytes called with the number of bytes written after each chunk (progress)
   */
  public static void write(
      Path file, List<TensorSpec> specs, DataSource source, java.util.function.LongConsumer onBytes)
      throws IOException {
    ObjectMapper json = new ObjectMapper();
    ObjectNode header = json.createObjectNode();
    header.putObject("__metadata__").put("format", "pt");
    long offset = 0;
    for (TensorSpec s : specs) {
      ObjectNode t = header.putObject(s.name());
      t.put("dtype", s.dtype().safetensorsName());
      var shape = t.putArray("shape");
      for (long d : s.shape()) {
        shape.add(d);
      }
      var offs = t.putArray("data_offsets");
      offs.add(offset);
      offs.add(offset + s.bytes());
      offset += s.bytes();
    }
    byte[] headerBytes = json.writeValueAsString(header).getBytes(StandardCharsets.UTF_8);
    int padded = (headerBytes.length + 7) / 8 * 8; // data starts 8-byte aligned
    ByteBuffer head = ByteBuffer.allocate(8 + padded).order(ByteOrder.LITTLE_ENDIAN);
    head.putLong(padded).put(headerBytes);
    while (head.hasRemaining()) {
      head.put((byte) ' ');
    }
    head.flip();
    try (FileChannel ch =
        FileChannel.open(
            file,
            StandardOpenOption.CREATE,
            StandardOpenOption.TRUNCATE_EXISTING,
            StandardOpenOption.WRITE)) {
      writeFully(ch, head);
      ByteBuffer buf = ByteBuffer.allocateDirect(CHUNK).order(ByteOrder.LITTLE_ENDIAN);
      for (TensorSpec s : specs) {
        long done = 0;
        while (done < s.bytes()) {
          int n = (int) Math.min(CHUNK, s.bytes() - done);
          fillParallel(source, s, done, buf, n);
          buf.position(0).limit(n);
          writeFully(ch, buf);
          done += n;
          onBytes.accept(n);
        }
      }
    }
  }

  /** Fills the first {@code n} bytes of {@code buf} in slices on the common pool. */
  private static void fillParallel(
      DataSource source, TensorSpec s, long offset, ByteBuffer buf, int n) {
    buf.clear();
    int slice = Math.max(8, (n / SLICES + 7) / 8 * 8);
    java.util.stream.IntStream.range(0, (n + slice - 1) / slice)
        .parallel()
        .forEach(
            i -> {
              int from = i * slice;
              int len = Math.min(slice, n - from);
              ByteBuffer part = buf.slice(from, len).order(ByteOrder.LITTLE_ENDIAN);
              source.fill(s, offset + from, part);
            });
  }

  private static void writeFully(FileChannel ch, ByteBuffer b) throws IOException {
    while (b.hasRemaining()) {
      ch.write(b);
    }
  }
}
