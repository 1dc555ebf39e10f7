package dev.ringmaster.server.http;

import com.fasterxml.jackson.databind.JsonNode;
import dev.ringmaster.server.api.Json;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;

/**
 * A server-sent event stream in the framing OpenAI uses: each event is {@code data: <json>} and a
 * blank line, and the stream ends with {@code data: [DONE]}. Written directly rather than through
 * Helidon's SSE sink because that one writes {@code data:} without the space, and several benchmark
 * clients match the prefix {@code "data: "} literally.
 */
public final class SseStream {
  private static final byte[] PREFIX = "data: ".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] END = "\n\n".getBytes(StandardCharsets.US_ASCII);
  private final java.util.function.Supplier<OutputStream> open;
  private OutputStream out;

  /** The response stream is opened (and the headers committed) by the first event. */
  SseStream(java.util.function.Supplier<OutputStream> open) {
    this.open = open;
  }

  /** Whether an event was written, so the status and headers have gone out. */
  public boolean started() {
    return out != null;
  }

  /**
   * Sends one event and flushes it.
   *
   * @throws ClientGoneException when the client has disconnected
   */
  public void send(JsonNode data) {
    write(Json.bytes(data));
  }

  /** Sends the final {@code data: [DONE]} event. */
  public void done() {
    write("[DONE]".getBytes(StandardCharsets.US_ASCII));
  }

  private void write(byte[] payload) {
    try {
      if (out == null) {
        out = open.get();
      }
      out.write(PREFIX);
      out.write(payload);
      out.write(END);
      out.flush();
    } catch (IOException | UncheckedIOException e) {
      throw new ClientGoneException(e);
    } catch (RuntimeException e) {
      // Helidon reports a closed connection with its own unchecked exceptions.
      throw new ClientGoneException(e);
    }
  }

  void close() {
    if (out == null) {
      return;
    }
    try {
      out.close();
    } catch (IOException | RuntimeException e) {
      // The client is gone; nothing left to tell it.
    }
  }
}
