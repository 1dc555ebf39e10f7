package dev.ringmaster.model.multinode;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.Socket;
import java.nio.charset.StandardCharsets;

/**
 * The control-plane connection between node 0 and one other node: framed messages (type, length,
 * payload). Writes are synchronized, so any thread may send; one thread reads.
 */
final class ControlChannel implements AutoCloseable {
  static final int HELLO = 1;
  static final int WELCOME = 2;
  static final int REFUSED = 3;
  static final int READY = 4;
  static final int START = 5;
  static final int ABORT = 6;
  static final int STEP = 7;
  static final int DONE = 8;
  static final int SHUTDOWN = 9;

  private static final int MAX_PAYLOAD = 1 << 30;

  private final Socket socket;
  private final DataInputStream in;
  private final DataOutputStream out;

  ControlChannel(Socket socket) throws IOException {
    this.socket = socket;
    socket.setTcpNoDelay(true);
    socket.setKeepAlive(true);
    this.in = new DataInputStream(new BufferedInputStream(socket.getInputStream(), 1 << 16));
    this.out = new DataOutputStream(new BufferedOutputStream(socket.getOutputStream(), 1 << 16));
  }

  /** One message. */
  record Message(int type, byte[] payload) {
    /** The payload as a stream of values. */
    DataInputStream data() {
      return new DataInputStream(new ByteArrayInputStream(payload));
    }
  }

  Socket socket() {
    return socket;
  }

  /** The other end, as {@code host:port}. */
  String peer() {
    return socket.getInetAddress().getHostAddress() + ":" + socket.getPort();
  }

  synchronized void send(int type, byte[] payload) throws IOException {
    out.writeInt(type);
    out.writeInt(payload.length);
    out.write(payload);
    out.flush();
  }

  void send(int type) throws IOException {
    send(type, new byte[0]);
  }

  Message read() throws IOException {
    int type = in.readInt();
    int len = in.readInt();
    if (len < 0 || len > MAX_PAYLOAD) {
      throw new IOException("bad control message length " + len + " (not a Ringmaster node?)");
    }
    byte[] payload = new byte[len];
    in.readFully(payload);
    return new Message(type, payload);
  }

  @Override
  public void close() {
    try {
      socket.close();
    } catch (IOException ignored) {
      // best effort: the connection is finished either way
    }
  }

  /** What went wrong with a connection, in words ("the connection closed" for an EOF). */
  static String reason(IOException e) {
    if (e instanceof java.io.EOFException) {
      return "the connection closed";
    }
    return e.getMessage() != null ? e.getMessage() : e.getClass().getSimpleName();
  }

  /** Builds a payload. */
  static byte[] payload(Writer w) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try {
      w.write(new DataOutputStream(bytes));
    } catch (IOException e) {
      throw new UncheckedIOException(e); // a byte array stream does not fail
    }
    return bytes.toByteArray();
  }

  /** Writes a payload's values. */
  @FunctionalInterface
  interface Writer {
    void write(DataOutputStream out) throws IOException;
  }

  static void writeString(DataOutputStream out, String s) throws IOException {
    byte[] b = s.getBytes(StandardCharsets.UTF_8);
    out.writeInt(b.length);
    out.write(b);
  }

  static String readString(DataInputStream in) throws IOException {
    int n = in.readInt();
    if (n < 0 || n > MAX_PAYLOAD) {
      throw new IOException("bad string length " + n);
    }
    byte[] b = new byte[n];
    in.readFully(b);
    return new String(b, StandardCharsets.UTF_8);
  }

  static void writeInts(DataOutputStream out, int[] v) throws IOException {
    out.writeInt(v.length);
    for (int x : v) {
      out.writeInt(x);
    }
  }

  static int[] readInts(DataInputStream in) throws IOException {
    int n = in.readInt();
    if (n < 0 || n > MAX_PAYLOAD / 4) {
      throw new IOException("bad array length " + n);
    }
    int[] v = new int[n];
    for (int i = 0; i < n; i++) {
      v[i] = in.readInt();
    }
    return v;
  }
}
