package dev.ringmaster.parallel.tcp;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.function.Consumer;

/**
 * One rank's end of the socket to one peer rank. Frames are a 12-byte header (operation, sequence
 * number, element count) and the elements as little-endian 4-byte values.
 *
 * <p>Sending never blocks the rank: a frame is serialized at once (so the caller may reuse its
 * array) and queued for this link's writer thread. That is what lets every collective send first
 * and receive afterwards without deadlocking on full socket buffers. Only the owning rank's thread
 * reads.
 */
final class Link {
  static final int HEADER_BYTES = 12;
  private static final int READ_CHUNK_BYTES = 1 << 20;
  private static final byte[] STOP = new byte[0];

  final int peer;
  private final Socket socket;
  private final InputStream in;
  private final OutputStream out;
  private final LinkedBlockingQueue<byte[]> outbox = new LinkedBlockingQueue<>();
  private final Thread writer;
  private final Consumer<IOException> onWriteFailure;
  private final byte[] header = new byte[HEADER_BYTES];
  private byte[] readBuf = new byte[0];
  private volatile boolean closed;

  /**
   * Wraps a connected socket.
   *
   * @param self this end's rank (names the writer thread)
   * @param peer the other end's rank
   * @param timeout longest wait for the peer's data in a read
   * @param onWriteFailure told when a write fails (the world aborts)
   */
  Link(int self, int peer, Socket socket, Duration timeout, Consumer<IOException> onWriteFailure)
      throws IOException {
    this.peer = peer;
    this.socket = socket;
    this.onWriteFailure = onWriteFailure;
    socket.setTcpNoDelay(true);
    socket.setKeepAlive(true);
    socket.setSoTimeout((int) timeout.toMillis());
    this.in = socket.getInputStream();
    this.out = socket.getOutputStream();
    this.writer =
        Thread.ofVirtual().name("ringmaster-link-" + self + "-" + peer).start(this::drain);
  }

  private void drain() {
    try {
      while (true) {
        byte[] frame = outbox.take();
        if (frame == STOP) {
          return;
        }
        out.write(frame);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (IOException e) {
      if (!closed) {
        onWriteFailure.accept(e);
      }
    }
  }

  private static ByteBuffer frame(int op, int seq, int count) {
    ByteBuffer b = ByteBuffer.allocate(HEADER_BYTES + 4 * count).order(ByteOrder.LITTLE_ENDIAN);
    return b.putInt(op).putInt(seq).putInt(count);
  }

  /** Queues {@code src[off, off+len)} for the peer. */
  void sendFloats(int op, int seq, float[] src, int off, int len) {
    ByteBuffer b = frame(op, seq, len);
    b.asFloatBuffer().put(src, off, len);
    outbox.add(b.array());
  }

  /** Queues {@code src[off, off+len)} for the peer. */
  void sendInts(int op, int seq, int[] src, int off, int len) {
    ByteBuffer b = frame(op, seq, len);
    b.asIntBuffer().put(src, off, len);
    outbox.add(b.array());
  }

  /** Reads the next frame's header into {@code opSeqCount}: operation, sequence, count. */
  void readHeader(int[] opSeqCount) throws IOException {
    readFully(header, HEADER_BYTES);
    ByteBuffer h = ByteBuffer.wrap(header).order(ByteOrder.LITTLE_ENDIAN);
    opSeqCount[0] = h.getInt();
    opSeqCount[1] = h.getInt();
    opSeqCount[2] = h.getInt();
  }

  /** Reads {@code count} floats of the current frame into {@code dst[off...]}. */
  void readFloats(float[] dst, int off, int count) throws IOException {
    int done = 0;
    while (done < count) {
      int n = Math.min(count - done, READ_CHUNK_BYTES / 4);
      ByteBuffer b = fill(4 * n);
      b.asFloatBuffer().get(dst, off + done, n);
      done += n;
    }
  }

  /** Reads {@code count} ints of the current frame into {@code dst[off...]}. */
  void readInts(int[] dst, int off, int count) throws IOException {
    int done = 0;
    while (done < count) {
      int n = Math.min(count - done, READ_CHUNK_BYTES / 4);
      ByteBuffer b = fill(4 * n);
      b.asIntBuffer().get(dst, off + done, n);
      done += n;
    }
  }

  private ByteBuffer fill(int bytes) throws IOException {
    if (readBuf.length < bytes) {
      readBuf = new byte[Math.max(bytes, Math.min(2 * readBuf.length, READ_CHUNK_BYTES))];
    }
    readFully(readBuf, bytes);
    return ByteBuffer.wrap(readBuf, 0, bytes).order(ByteOrder.LITTLE_ENDIAN);
  }

  private void readFully(byte[] b, int len) throws IOException {
    int n = in.readNBytes(b, 0, len);
    if (n < len) {
      throw new EOFException("connection closed by the peer");
    }
  }

  /**
   * Closes the link after the queued frames have been written (waiting at most {@code grace}), so a
   * peer still receiving the end of a collective gets its data.
   */
  void close(Duration grace) {
    outbox.add(STOP);
    try {
      writer.join(grace);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    abort();
  }

  /** Closes the socket at once: blocked reads and writes on both ends fail. */
  void abort() {
    closed = true;
    try {
      socket.close();
    } catch (IOException ignored) {
      // closing is best effort; the socket is unusable either way
    }
    writer.interrupt();
  }
}
