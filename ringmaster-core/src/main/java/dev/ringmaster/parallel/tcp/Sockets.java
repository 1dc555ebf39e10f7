package dev.ringmaster.parallel.tcp;

import java.io.IOException;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.NoRouteToHostException;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.util.function.BooleanSupplier;

/** Connecting to a node that may not be listening yet. */
public final class Sockets {
  private static final long RETRY_MILLIS = 100;

  private Sockets() {}

  /**
   * Connects to {@code address}, retrying while the connection is refused (the other side not
   * listening yet) until {@code deadlineNanos} ({@link System#nanoTime()} based).
   *
   * @param what what is being reached, for the error message (for example "node 0")
   * @throws SocketTimeoutException naming {@code what}, the address and the time waited when the
   *     deadline passes
   */
  public static Socket connect(InetSocketAddress address, long deadlineNanos, String what)
      throws IOException {
    return connect(address, deadlineNanos, what, () -> false);
  }

  /**
   * As {@link #connect(InetSocketAddress, long, String)}, giving up with an {@link IOException} as
   * soon as {@code cancelled} says so.
   */
  public static Socket connect(
      InetSocketAddress address, long deadlineNanos, String what, BooleanSupplier cancelled)
      throws IOException {
    long start = System.nanoTime();
    IOException last = null;
    while (true) {
      if (cancelled.getAsBoolean()) {
        throw new IOException("cancelled while connecting to " + what + " at " + format(address));
      }
      long left = (deadlineNanos - System.nanoTime()) / 1_000_000;
      if (left <= 0) {
        throw timeout(address, start, what, last);
      }
      if (address.isUnresolved()) {
        throw new IOException("cannot resolve " + address.getHostString() + " (" + what + ")");
      }
      Socket s = new Socket();
      try {
        s.connect(address, (int) Math.min(left, Integer.MAX_VALUE));
        return s;
      } catch (ConnectException | NoRouteToHostException e) {
        s.close();
        last = e; // not listening yet, or the route is not up yet: retry
      } catch (SocketTimeoutException e) {
        s.close();
        throw timeout(address, start, what, e);
      } catch (IOException e) {
        s.close();
        throw e;
      }
      try {
        Thread.sleep(Math.min(RETRY_MILLIS, Math.max(1, left)));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IOException("interrupted while connecting to " + what + " at " + address, e);
      }
    }
  }

  private static SocketTimeoutException timeout(
      InetSocketAddress address, long startNanos, String what, IOException last) {
    double waited = (System.nanoTime() - startNanos) / 1e9;
    SocketTimeoutException e =
        new SocketTimeoutException(
            String.format(
                "could not reach %s at %s within %.0f s%s",
                what, format(address), waited, last != null ? " (" + last.getMessage() + ")" : ""));
    if (last != null) {
      e.initCause(last);
    }
    return e;
  }

  /** {@code host:port} ({@code [v6]:port} for IPv6 literals). */
  public static String format(InetSocketAddress a) {
    String host = a.getHostString();
    return (host.contains(":") ? "[" + host + "]" : host) + ":" + a.getPort();
  }
}
