package dev.ringmaster.server.http;

import io.helidon.common.buffers.DataReader;
import io.helidon.http.DirectHandler;
import io.helidon.http.RequestException;
import io.helidon.http.Status;
import java.util.function.Supplier;

/**
 * A reader whose lines parse as chunk-size lines of HTTP/1.1 ({@code chunk-size [; chunk-ext]}):
 * the HTTP/1 parser reads lines with {@link #readLine} only for chunked bodies, and it would take
 * an extension such as {@code 9;ext=1} for part of the number. Extensions are dropped (none is
 * understood), and a size that is not hexadecimal or does not fit a body is the client's error
 * (400) rather than a number-format failure inside the server.
 */
final class ChunkSizeReader extends DataReader {
  /** Seven hex digits: chunks below 256 MiB, far above any body limit the server accepts. */
  private static final int MAX_SIZE_DIGITS = 7;

  @SuppressWarnings("removal") // DataReader.create gives no subclass; the constructor stays in 4.x
  ChunkSizeReader(Supplier<byte[]> bytes) {
    super(bytes);
  }

  @Override
  public String readLine() throws IncorrectNewLineException {
    return chunkSize(super.readLine());
  }

  /** The size part of a chunk-size line (extensions and whitespace dropped); "" stays "". */
  static String chunkSize(String line) {
    if (line.isEmpty()) {
      return line; // the blank line after the last chunk
    }
    int semi = line.indexOf(';');
    String size = (semi >= 0 ? line.substring(0, semi) : line).strip();
    int digits = 0;
    boolean leading = true;
    for (int i = 0; i < size.length(); i++) {
      if (Character.digit(size.charAt(i), 16) < 0) {
        throw invalid("the chunk size '" + printable(line) + "' is not a hexadecimal number");
      }
      if (leading && size.charAt(i) == '0') {
        continue;
      }
      leading = false;
      digits++;
    }
    if (size.isEmpty()) {
      throw invalid("a chunk-size line is empty");
    }
    if (digits > MAX_SIZE_DIGITS) {
      throw invalid("the chunk size '" + printable(size) + "' is too large");
    }
    return size;
  }

  private static String printable(String s) {
    String t = s.length() > 40 ? s.substring(0, 40) + "..." : s;
    return t.replaceAll("[^\\x20-\\x7e]", "?");
  }

  private static RequestException invalid(String message) {
    return RequestException.builder()
        .type(DirectHandler.EventType.BAD_REQUEST)
        .status(Status.BAD_REQUEST_400)
        .message(message)
        .safeMessage(true)
        .setKeepAlive(false)
        .build();
  }
}
