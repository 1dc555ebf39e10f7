package dev.ringmaster.server.http;

/** The client closed the connection while we were writing to it. */
public final class ClientGoneException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  ClientGoneException(Throwable cause) {
    super("client disconnected", cause);
  }
}
