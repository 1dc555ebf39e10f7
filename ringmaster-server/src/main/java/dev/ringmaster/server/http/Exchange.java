package dev.ringmaster.server.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ringmaster.server.api.ApiException;
import dev.ringmaster.server.api.Json;
import io.helidon.http.HeaderNames;
import io.helidon.http.Status;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;

/** One HTTP request and its response, with the reading and writing every endpoint needs. */
public final class Exchange {
  private final ServerRequest req;
  private final ServerResponse res;
  private final long maxBodyBytes;
  private final ConnectionWatch connections;
  private final long receivedNanos = System.nanoTime();
  private SseStream sse;

  Exchange(ServerRequest req, ServerResponse res, long maxBodyBytes, ConnectionWatch connections) {
    this.req = req;
    this.res = res;
    this.maxBodyBytes = maxBodyBytes;
    this.connections = connections;
  }

  /** When the request reached its handler ({@link System#nanoTime}), before its body was read. */
  public long receivedNanos() {
    return receivedNanos;
  }

  /** The request method, e.g. {@code POST}. */
  public String method() {
    return req.prologue().method().text();
  }

  /** The path parameter {@code name} of the matched route, e.g. {@code id} of {@code /x/{id}}. */
  public String pathParam(String name) {
    return req.path().pathParameters().first(name).orElse(null);
  }

  /**
   * Whether the client closed its connection (a request waiting for the engine then stops). False
   * while the connection is open or cannot be watched.
   */
  public boolean clientGone() {
    return connections != null && connections.clientGone(req.serverSocketId(), req.socketId());
  }

  /** Sets a response header (before the response starts). */
  public void responseHeader(String name, String value) {
    res.header(HeaderNames.create(name), value);
  }

  /** The request path. */
  public String path() {
    return req.path().path();
  }

  /**
   * The body, at most the configured size.
   *
   * @throws ApiException 413 when larger
   */
  public byte[] body() {
    try (InputStream in = req.content().inputStream()) {
      byte[] b = in.readNBytes((int) Math.min(Integer.MAX_VALUE - 8, maxBodyBytes + 1));
      if (b.length > maxBodyBytes) {
        throw tooLarge(maxBodyBytes);
      }
      return b;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** 413 for a body over the limit. */
  static ApiException tooLarge(long limit) {
    return new ApiException(
        413,
        "invalid_request_error",
        null,
        "request_too_large",
        "the request body exceeds the limit of " + limit + " bytes",
        0);
  }

  /** The body as a JSON object (400 when it is not one). */
  public ObjectNode json() {
    return Json.parseObject(body());
  }

  /** Sends a JSON response. */
  public void send(int status, JsonNode body) {
    res.status(Status.create(status));
    res.header(HeaderNames.CONTENT_TYPE, "application/json");
    res.send(Json.bytes(body));
  }

  /** Sends a 200 JSON response. */
  public void ok(JsonNode body) {
    send(200, body);
  }

  /** Sends a plain response. */
  public void send(int status, String contentType, byte[] body) {
    res.status(Status.create(status));
    res.header(HeaderNames.CONTENT_TYPE, contentType);
    res.send(body);
  }

  /** Sends an empty 200. */
  public void okEmpty() {
    res.status(Status.OK_200);
    res.send(new byte[0]);
  }

  /** Sends an empty response with this status. */
  public void empty(int status) {
    res.status(Status.create(status));
    res.send(new byte[0]);
  }

  /** Sends an error object. */
  public void error(ApiException e) {
    if (e.retryAfterSeconds() > 0) {
      res.header(HeaderNames.RETRY_AFTER, String.valueOf(e.retryAfterSeconds()));
    }
    if (e.status() == 413) {
      // The rest of the oversized body is never read, so this connection cannot carry another
      // request: say so, or a keep-alive client may reuse it and see the server hang up.
      res.header(HeaderNames.CONNECTION, "close");
    }
    send(e.status(), Json.error(e));
  }

  /** Starts a server-sent event stream (status 200); headers go out with the first event. */
  public SseStream sse() {
    if (sse == null) {
      res.status(Status.OK_200);
      res.header(HeaderNames.CONTENT_TYPE, "text/event-stream; charset=utf-8");
      res.header(HeaderNames.CACHE_CONTROL, "no-cache");
      sse = new SseStream(res::outputStream);
    }
    return sse;
  }

  /** Whether a response has been started. */
  boolean started() {
    return (sse != null && sse.started()) || res.isSent();
  }

  void closeStream() {
    if (sse != null) {
      sse.close();
    }
  }

  /** A request header, or null. */
  public String header(String name) {
    return req.headers().first(HeaderNames.create(name)).orElse(null);
  }

  static String utf8(byte[] b) {
    return new String(b, StandardCharsets.UTF_8);
  }
}
