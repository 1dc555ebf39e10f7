package dev.ringmaster.server.http;

import io.helidon.common.buffers.DataReader;
import io.helidon.common.buffers.DataWriter;
import io.helidon.common.socket.PeerInfo;
import io.helidon.webserver.ConnectionContext;
import io.helidon.webserver.ListenerContext;
import io.helidon.webserver.Router;
import java.util.concurrent.ExecutorService;

/**
 * A connection's context with another reader and writer in place of the socket's: how {@link
 * ConnectionWatch} and {@link Http10Connections} put their streams between the socket and Helidon's
 * HTTP/1.1 connection.
 *
 * @param ctx the socket's context
 * @param reader what the connection reads instead of the socket
 * @param writer what the connection writes to instead of the socket
 */
record SwappedContext(ConnectionContext ctx, DataReader reader, DataWriter writer)
    implements ConnectionContext {
  @Override
  public ListenerContext listenerContext() {
    return ctx.listenerContext();
  }

  @Override
  public ExecutorService executor() {
    return ctx.executor();
  }

  @Override
  public DataWriter dataWriter() {
    return writer;
  }

  @Override
  public DataReader dataReader() {
    return reader;
  }

  @Override
  public Router router() {
    return ctx.router();
  }

  @Override
  public java.util.Optional<io.helidon.webserver.ProxyProtocolData> proxyProtocolData() {
    return ctx.proxyProtocolData();
  }

  @Override
  public io.helidon.common.socket.HelidonSocket serverSocket() {
    return ctx.serverSocket();
  }

  @Override
  public PeerInfo remotePeer() {
    return ctx.remotePeer();
  }

  @Override
  public PeerInfo localPeer() {
    return ctx.localPeer();
  }

  @Override
  public boolean isSecure() {
    return ctx.isSecure();
  }

  @Override
  public String socketId() {
    return ctx.socketId();
  }

  @Override
  public String childSocketId() {
    return ctx.childSocketId();
  }
}
