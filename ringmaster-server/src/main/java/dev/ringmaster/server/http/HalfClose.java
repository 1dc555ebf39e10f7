package dev.ringmaster.server.http;

import io.helidon.common.socket.HelidonSocket;
import java.io.IOException;
import java.lang.reflect.Field;
import java.net.Socket;
import java.nio.channels.SocketChannel;
import java.util.Optional;

/**
 * Ends the server's side of a plain connection (a TCP FIN after the bytes written so far) and
 * leaves the client's side open, so that what the client still sends can be read. Helidon's socket
 * has no call for it, so the channel or socket it wraps is found among its fields by type.
 */
final class HalfClose {
  private static final System.Logger LOG = System.getLogger(HalfClose.class.getName());

  /** The field holding the channel (or socket) of each kind of Helidon socket, where it has one. */
  private static final ClassValue<Optional<Field>> TRANSPORT =
      new ClassValue<>() {
        @Override
        protected Optional<Field> computeValue(Class<?> type) {
          for (Class<?> c = type; c != null && c != Object.class; c = c.getSuperclass()) {
            for (Field f : c.getDeclaredFields()) {
              if (SocketChannel.class.isAssignableFrom(f.getType())
                  || Socket.class.isAssignableFrom(f.getType())) {
                try {
                  f.setAccessible(true);
                  return Optional.of(f);
                } catch (RuntimeException e) {
                  LOG.log(System.Logger.Level.WARNING, "cannot reach the socket of " + type, e);
                  return Optional.empty();
                }
              }
            }
          }
          LOG.log(
              System.Logger.Level.WARNING,
              type
                  + " holds no socket channel: connections the server ends close at once, and a"
                  + " client still sending its request may see them reset");
          return Optional.empty();
        }
      };

  private HalfClose() {}

  /**
   * Shuts down the output of {@code socket}; false when it cannot (a TLS socket, whose end must go
   * through TLS, a socket of an unknown kind, or one already closed).
   */
  static boolean shutdownOutput(HelidonSocket socket) {
    if (socket.isSecure()) {
      return false;
    }
    Optional<Field> f = TRANSPORT.get(socket.getClass());
    if (f.isEmpty()) {
      return false;
    }
    try {
      Object transport = f.get().get(socket);
      if (transport instanceof SocketChannel ch) {
        ch.shutdownOutput();
        return true;
      }
      if (transport instanceof Socket s) {
        s.shutdownOutput();
        return true;
      }
      return false;
    } catch (IOException | IllegalAccessException e) {
      return false; // closed, or reset by the client: nothing to linger for
    }
  }
}
