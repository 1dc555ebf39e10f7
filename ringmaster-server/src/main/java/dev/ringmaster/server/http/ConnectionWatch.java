package dev.ringmaster.server.http;

import io.helidon.common.buffers.BufferData;
import io.helidon.common.buffers.DataReader;
import io.helidon.common.concurrency.limits.Limit;
import io.helidon.webserver.ConnectionContext;
import io.helidon.webserver.spi.ServerConnection;
import io.helidon.webserver.spi.ServerConnectionSelector;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * Watches the HTTP/1.x connections so that a request thread can tell that its client hung up while
 * it waits for the engine: each connection's bytes are read by a small pump thread that notices the
 * end of the stream at once, instead of only when the next request is parsed. The pump hands the
 * bytes on unchanged, through a {@link ChunkSizeReader} that makes chunk-size lines parse as
 * HTTP/1.1 defines them.
 *
 * <p>A connection the server ends while its client is still there is closed in stages (RFC 9112
 * section 9.6): the server's side first, then the client's bytes are read and dropped until the
 * client closes too, falls quiet or takes too long. Closed at once, a socket with bytes unread, or
 * one that more bytes reach, is reset; a 413 goes out on the request's headers while its body may
 * still be on the way, and a client whose write of that body fails on the reset may lose the 413 it
 * was sent (the JDK client reports "header parser received no bytes").
 */
public final class ConnectionWatch {
  /** How long a closing connection waits for more of its client's bytes before it closes. */
  private static final long LINGER_QUIET_NANOS = 2_000_000_000L;

  /** The longest a closing connection reads a client that goes on sending. */
  private static final long LINGER_MAX_NANOS = 30_000_000_000L;

  private final ConcurrentHashMap<String, Pump> open = new ConcurrentHashMap<>();

  /** Whether the client of the connection with these ids has closed it. */
  boolean clientGone(String serverSocketId, String socketId) {
    Pump p = open.get(serverSocketId + "/" + socketId);
    if (p == null) {
      p = open.get(socketId + "/" + serverSocketId);
    }
    return p != null && p.peerClosed;
  }

  /** Connections open now (for tests and diagnostics). */
  public int openConnections() {
    return open.size();
  }

  /** A selector that hands {@code http} connections over watched and with tolerant chunks. */
  public ServerConnectionSelector watch(ServerConnectionSelector http) {
    return new ServerConnectionSelector() {
      @Override
      public int bytesToIdentifyConnection() {
        return http.bytesToIdentifyConnection();
      }

      @Override
      public Support supports(BufferData request) {
        return http.supports(request);
      }

      @Override
      public Set<String> supportedApplicationProtocols() {
        return http.supportedApplicationProtocols();
      }

      @Override
      public ServerConnection connection(ConnectionContext ctx) {
        return watched(ctx, c -> http.connection(c));
      }
    };
  }

  /** Opens a connection over a pumped reader and forgets it once it ends. */
  ServerConnection watched(
      ConnectionContext ctx,
      java.util.function.Function<ConnectionContext, ServerConnection> make) {
    String key = ctx.socketId() + "/" + ctx.childSocketId();
    Pump pump = new Pump(ctx.dataReader());
    open.put(key, pump);
    ServerConnection inner;
    try {
      inner = make.apply(new SwappedContext(ctx, pump.reader, ctx.dataWriter()));
    } catch (RuntimeException e) {
      open.remove(key, pump);
      throw e;
    }
    pump.start();
    return new ServerConnection() {
      private volatile boolean closeRequested;

      @Override
      public void handle(Limit limit) throws InterruptedException {
        try {
          inner.handle(limit);
        } finally {
          open.remove(key, pump);
          // Idle connections and those of a stopping server close at once.
          if (!closeRequested) {
            pump.closeInStages(ctx, () -> closeRequested);
          }
        }
      }

      @Override
      public Duration idleTime() {
        return inner.idleTime();
      }

      @Override
      public void close(boolean interrupt) {
        closeRequested = true;
        inner.close(interrupt);
      }
    };
  }

  /**
   * Reads a connection's bytes ahead of the parser, a few buffers at most, and records when the
   * client closed its side.
   */
  private static final class Pump {
    private final DataReader source;
    private final ArrayBlockingQueue<byte[]> queue = new ArrayBlockingQueue<>(4);
    final DataReader reader = new ChunkSizeReader(this::next);
    volatile boolean peerClosed;

    Pump(DataReader source) {
      this.source = source;
    }

    void start() {
      Thread.ofVirtual().name("ringmaster-connection-pump").start(this::run);
    }

    private void run() {
      try {
        while (true) {
          if (source.available() == 0) {
            source.pullData(); // blocks; throws at the end of the stream
          }
          queue.put(source.readBytes(source.available()));
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } catch (RuntimeException e) {
        // The end of the stream, or the socket failed or was closed: either way the client is gone.
      } finally {
        peerClosed = true;
      }
    }

    /**
     * Ends the server's side of a connection whose client has not closed its own, then drops the
     * client's bytes until it does, sends none for {@link #LINGER_QUIET_NANOS}, has sent for {@link
     * #LINGER_MAX_NANOS} or {@code stop} says so; the caller then closes the socket.
     */
    void closeInStages(ConnectionContext ctx, BooleanSupplier stop) {
      if (peerClosed || !HalfClose.shutdownOutput(ctx.serverSocket())) {
        return;
      }
      long start = System.nanoTime();
      long lastBytes = start;
      try {
        while (!peerClosed && !stop.getAsBoolean()) {
          long now = System.nanoTime();
          if (now - lastBytes > LINGER_QUIET_NANOS || now - start > LINGER_MAX_NANOS) {
            return;
          }
          if (queue.poll(50, TimeUnit.MILLISECONDS) != null) {
            lastBytes = System.nanoTime();
          }
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }

    /** The next bytes for the parser; null at the end of the stream. */
    private byte[] next() {
      try {
        while (true) {
          byte[] b = queue.poll(50, TimeUnit.MILLISECONDS);
          if (b != null) {
            return b;
          }
          if (peerClosed && queue.isEmpty()) {
            return null;
          }
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return null;
      }
    }
  }
}
