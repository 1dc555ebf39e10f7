package dev.ringmaster.server.http;

import io.helidon.common.buffers.BufferData;
import io.helidon.common.buffers.DataReader;
import io.helidon.common.buffers.DataWriter;
import io.helidon.webserver.ConnectionContext;
import io.helidon.webserver.spi.ServerConnection;
import io.helidon.webserver.spi.ServerConnectionSelector;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.Set;

/**
 * HTTP/1.0 clients (ApacheBench, nginx {@code proxy_pass} by default, HAProxy health checks), which
 * the HTTP/1.1 parser refuses: each request is handed to it as HTTP/1.1 (with {@code Connection:
 * close} unless the client asked for keep-alive, and a {@code Host} when it sent none), and each
 * response is made one an HTTP/1.0 client reads: a chunked body is sent unchunked and ends with the
 * connection, and a kept-alive response says {@code Connection: keep-alive}.
 */
public final class Http10Connections {
  private static final int MAX_HEAD_BYTES = 64 * 1024;

  private Http10Connections() {}

  /** The selector for connections whose first request line ends in {@code HTTP/1.0}. */
  public static ServerConnectionSelector selector(
      ConnectionWatch watch, ServerConnectionSelector http11) {
    return new ServerConnectionSelector() {
      @Override
      public int bytesToIdentifyConnection() {
        return 0;
      }

      @Override
      public Support supports(BufferData request) {
        int lf = request.indexOf((byte) '\n');
        if (lf < 0) {
          return request.available() > MAX_HEAD_BYTES ? Support.UNSUPPORTED : Support.UNKNOWN;
        }
        return request.readString(lf).endsWith(" HTTP/1.0\r")
            ? Support.SUPPORTED
            : Support.UNSUPPORTED;
      }

      @Override
      public Set<String> supportedApplicationProtocols() {
        return Set.of();
      }

      @Override
      public ServerConnection connection(ConnectionContext ctx) {
        Translation t = new Translation(ctx);
        return watch.watched(new SwappedContext(ctx, t.requests, t.responses), http11::connection);
      }
    };
  }

  /** One HTTP/1.0 connection's translation, both ways. */
  private static final class Translation {
    private final ConnectionContext ctx;
    private final DataReader source;
    private final DataReader requests;
    private final DataWriter responses;
    // Request side (parser thread).
    private long bodyLeft;
    private volatile boolean lastRequest;
    // Response side (handler threads, one response at a time).
    private final ByteArrayOutputStream head = new ByteArrayOutputStream();
    private boolean inHead = true;
    private boolean chunked;
    private long plainLeft;
    private final ChunkDecoder decoder = new ChunkDecoder();
    private volatile boolean keepAliveAsked;

    Translation(ConnectionContext ctx) {
      this.ctx = ctx;
      this.source = ctx.dataReader();
      this.requests = DataReader.create(this::nextRequestBytes);
      this.responses = new ResponseWriter();
    }

    /** The next bytes of the request stream as HTTP/1.1; null once the connection is done. */
    private byte[] nextRequestBytes() {
      try {
        if (bodyLeft > 0) {
          if (source.available() == 0) {
            source.pullData();
          }
          int n = (int) Math.min(bodyLeft, source.available());
          bodyLeft -= n;
          return source.readBytes(n);
        }
        if (lastRequest) {
          // No request follows on this connection, but its end must still mean that the client
          // left (a request thread asks, ConnectionWatch): wait for the socket's own end, which
          // comes when the client hangs up or once the server closes after the response. Bytes a
          // client sends anyway are dropped.
          while (true) {
            if (source.available() == 0) {
              source.pullData(); // throws at the end of the stream
            }
            source.skip(source.available());
          }
        }
        return translateHead();
      } catch (DataReader.InsufficientDataAvailableException | IllegalStateException e) {
        return null;
      } catch (RuntimeException e) {
        return null; // the socket failed: the parser sees the end of the stream
      }
    }

    private byte[] translateHead() {
      String requestLine = readLine();
      StringBuilder out = new StringBuilder();
      boolean http10 = requestLine.endsWith(" HTTP/1.0");
      out.append(http10 ? requestLine.substring(0, requestLine.length() - 3) + "1.1" : requestLine);
      out.append("\r\n");
      boolean keepAlive = false;
      boolean host = false;
      long length = 0;
      for (String line; !(line = readLine()).isEmpty(); ) {
        int colon = line.indexOf(':');
        String name = colon < 0 ? line : line.substring(0, colon).strip().toLowerCase(Locale.ROOT);
        String value = colon < 0 ? "" : line.substring(colon + 1).strip();
        if (name.equals("connection")) {
          keepAlive = value.toLowerCase(Locale.ROOT).contains("keep-alive");
          continue;
        }
        if (name.equals("host")) {
          host = true;
        } else if (name.equals("content-length")) {
          try {
            length = Long.parseLong(value);
          } catch (NumberFormatException e) {
            length = 0; // the HTTP/1.1 parser rejects the header itself with a 400
          }
        }
        out.append(line).append("\r\n");
      }
      if (!host) {
        out.append("Host: ").append(ctx.localPeer().host()).append("\r\n");
      }
      out.append(keepAlive ? "Connection: keep-alive\r\n" : "Connection: close\r\n");
      out.append("\r\n");
      keepAliveAsked = keepAlive;
      lastRequest = !keepAlive;
      bodyLeft = Math.max(0, length);
      return out.toString().getBytes(StandardCharsets.ISO_8859_1);
    }

    private String readLine() {
      int eol = source.findNewLine(MAX_HEAD_BYTES);
      String line = source.readAsciiString(eol);
      source.skip(2);
      return line;
    }

    /** Rewrites one response after another as an HTTP/1.0 client reads them. */
    private final class ResponseWriter implements DataWriter {
      @Override
      public void write(BufferData... buffers) {
        for (BufferData b : buffers) {
          write(b);
        }
      }

      @Override
      public void write(BufferData buffer) {
        byte[] out = translate(buffer.copy().readBytes());
        if (out.length > 0) {
          ctx.dataWriter().write(BufferData.create(out));
        }
        finishIfDone();
      }

      @Override
      public void writeNow(BufferData... buffers) {
        for (BufferData b : buffers) {
          writeNow(b);
        }
      }

      @Override
      public void writeNow(BufferData buffer) {
        byte[] out = translate(buffer.copy().readBytes());
        if (out.length > 0) {
          ctx.dataWriter().writeNow(BufferData.create(out));
        }
        finishIfDone();
      }

      @Override
      public void flush() {
        ctx.dataWriter().flush();
      }

      @Override
      public void close() {
        ctx.dataWriter().close();
      }
    }

    /** After a chunked body's last chunk the response ends with the connection. */
    private void finishIfDone() {
      if (chunked && decoder.done()) {
        ctx.dataWriter().flush();
        lastRequest = true;
        ctx.serverSocket().close();
      }
    }

    private synchronized byte[] translate(byte[] in) {
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      int i = 0;
      while (i < in.length) {
        if (inHead) {
          head.write(in[i++]);
          byte[] h = head.toByteArray();
          int n = h.length;
          if (n >= 4
              && h[n - 4] == '\r'
              && h[n - 3] == '\n'
              && h[n - 2] == '\r'
              && h[n - 1] == '\n') {
            out.writeBytes(rewriteHead(new String(h, StandardCharsets.ISO_8859_1)));
            head.reset();
            inHead = false;
            if (!chunked && plainLeft == 0) {
              inHead = true; // no body
            }
          } else if (n > MAX_HEAD_BYTES) {
            throw new IllegalStateException("response head too large");
          }
        } else if (chunked) {
          i = decoder.feed(in, i, out);
          if (decoder.done()) {
            return out.toByteArray();
          }
        } else {
          int n = (int) Math.min(plainLeft, in.length - i);
          out.write(in, i, n);
          i += n;
          plainLeft -= n;
          if (plainLeft == 0) {
            inHead = true;
          }
        }
      }
      return out.toByteArray();
    }

    private byte[] rewriteHead(String h) {
      String[] lines = h.split("\r\n");
      StringBuilder sb = new StringBuilder(lines[0]).append("\r\n");
      chunked = false;
      plainLeft = 0;
      boolean closeSent = false;
      boolean informational = lines[0].matches("HTTP/1\\.[01] 1\\d\\d.*");
      for (int k = 1; k < lines.length; k++) {
        String line = lines[k];
        String lower = line.toLowerCase(Locale.ROOT);
        if (lower.startsWith("transfer-encoding:") && lower.contains("chunked")) {
          chunked = true;
          continue;
        }
        if (lower.startsWith("connection:")) {
          closeSent = lower.contains("close");
          continue;
        }
        if (lower.startsWith("content-length:")) {
          plainLeft = Long.parseLong(line.substring(line.indexOf(':') + 1).strip());
        }
        sb.append(line).append("\r\n");
      }
      if (informational) {
        sb.append("\r\n");
        return sb.toString().getBytes(StandardCharsets.ISO_8859_1);
      }
      boolean keep = keepAliveAsked && !chunked && !closeSent;
      sb.append(keep ? "Connection: keep-alive\r\n" : "Connection: close\r\n");
      sb.append("\r\n");
      if (chunked) {
        decoder.reset();
      }
      return sb.toString().getBytes(StandardCharsets.ISO_8859_1);
    }
  }

  /** Decodes a chunked body on the fly: sizes and framing dropped, data kept. */
  static final class ChunkDecoder {
    private final StringBuilder line = new StringBuilder();
    private long dataLeft;
    private int state; // 0 size line, 1 data, 2 CRLF after data, 3 trailers, 4 done

    void reset() {
      line.setLength(0);
      dataLeft = 0;
      state = 0;
    }

    boolean done() {
      return state == 4;
    }

    /** Consumes {@code in} from {@code i}; returns where it stopped (at the end, or when done). */
    int feed(byte[] in, int i, ByteArrayOutputStream out) {
      while (i < in.length && state != 4) {
        switch (state) {
          case 0, 2, 3 -> {
            char c = (char) (in[i++] & 0xff);
            if (c != '\n') {
              if (c != '\r') {
                line.append(c);
              }
              continue;
            }
            String l = line.toString();
            line.setLength(0);
            if (state == 2) {
              state = 0;
            } else if (state == 3) {
              if (l.isEmpty()) {
                state = 4;
              }
            } else {
              int semi = l.indexOf(';');
              dataLeft = Long.parseLong((semi < 0 ? l : l.substring(0, semi)).strip(), 16);
              state = dataLeft == 0 ? 3 : 1;
            }
          }
          default -> {
            int n = (int) Math.min(dataLeft, in.length - i);
            out.write(in, i, n);
            i += n;
            dataLeft -= n;
            if (dataLeft == 0) {
              state = 2;
            }
          }
        }
      }
      return i;
    }
  }
}
