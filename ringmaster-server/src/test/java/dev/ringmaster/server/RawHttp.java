package dev.ringmaster.server;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.nio.charset.StandardCharsets;

/**
 * Raw HTTP over a socket, for what {@code java.net.http} cannot send: HTTP/1.0, chunk extensions,
 * malformed framing.
 */
final class RawHttp {
  private RawHttp() {}

  /** Sends {@code request} and returns the response (see {@link #readAll}). */
  static String exchange(String baseUrl, String request) {
    URI u = URI.create(baseUrl);
    try (Socket s = new Socket(u.getHost(), u.getPort())) {
      s.setSoTimeout(30_000);
      s.getOutputStream().write(request.getBytes(StandardCharsets.UTF_8));
      s.getOutputStream().flush();
      return readAll(s.getInputStream());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * Reads one response: up to its {@code Content-Length} when it has one, else until the server
   * closes the connection.
   */
  static String readAll(InputStream in) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    byte[] b = new byte[8192];
    try {
      for (int n; (n = in.read(b)) > 0; ) {
        out.write(b, 0, n);
        String sofar = out.toString(StandardCharsets.ISO_8859_1);
        int end = sofar.indexOf("\r\n\r\n");
        if (end > 0) {
          var m =
              java.util.regex.Pattern.compile("(?im)^content-length:\\s*(\\d+)")
                  .matcher(sofar.substring(0, end));
          if (m.find() && out.size() >= end + 4 + Integer.parseInt(m.group(1))) {
            break;
          }
        }
      }
    } catch (SocketTimeoutException e) {
      throw new AssertionError("the server did not end its response: " + out, e);
    }
    return out.toString(StandardCharsets.UTF_8);
  }

  /** The status code of a raw response. */
  static int status(String response) {
    return Integer.parseInt(response.substring(9, 12));
  }

  /** The head (status line and headers) of a raw response. */
  static String head(String response) {
    return response.substring(0, response.indexOf("\r\n\r\n"));
  }

  /** The body of a raw response. */
  static String body(String response) {
    return response.substring(response.indexOf("\r\n\r\n") + 4);
  }
}
