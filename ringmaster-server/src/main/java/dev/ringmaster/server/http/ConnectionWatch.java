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

/**
 * Watches the HTTP/1.x connections so that a request thread can tell that its client hung up while
 * it waits for the engine: each connection's bytes are read by a small pump thread that notices the
 * end of the stream at once, instead of only when the next request is parsed. The pump hands the
 * bytes on unchanged, through a {@link ChunkSizeReader} that makes chunk-size lines parse as
 * HTTP/1.1 defines them.
 */
public final class ConnectionWatch {
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
      @Override
      public void handle(Limit limit) throws InterruptedException {
        try {
          inner.handle(limit);
        } finally {
          open.remove(key, pump);
        }
      }

      @Override
      public Duration idleTime() {
        return inner.idleTime();
      }

      @Override
      public void close(boolean interrupt) {
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
