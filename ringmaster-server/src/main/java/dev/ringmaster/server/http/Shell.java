package dev.ringmaster.server.http;

import dev.ringmaster.server.api.ApiException;
import dev.ringmaster.server.api.Json;
import io.helidon.http.DirectHandler;
import io.helidon.http.HeaderNames;
import io.helidon.http.HttpException;
import io.helidon.http.RequestException;
import io.helidon.http.Status;
import io.helidon.webserver.http.Handler;
import java.nio.charset.StandardCharsets;

/**
 * The hard shell around every endpoint: whatever an endpoint throws becomes an OpenAI-style error
 * object (4xx for the client's mistakes, 500 for ours), and nothing escapes to kill the connection
 * handler. Errors that happen before routing (malformed HTTP, oversized bodies) get the same format
 * through {@link #transportErrors}.
 */
public final class Shell {
  private static final System.Logger LOG = System.getLogger(Shell.class.getName());

  private Shell() {}

  /** Wraps an endpoint as a Helidon handler. */
  public static Handler wrap(Endpoint endpoint, long maxBodyBytes) {
    return wrap(endpoint, maxBodyBytes, null);
  }

  /**
   * Wraps an endpoint as a Helidon handler whose requests can tell when their client hung up
   * ({@link Exchange#clientGone}).
   */
  public static Handler wrap(Endpoint endpoint, long maxBodyBytes, ConnectionWatch connections) {
    return (req, res) -> {
      Exchange ex = new Exchange(req, res, maxBodyBytes, connections);
      try {
        endpoint.handle(ex);
      } catch (ClientGoneException
          | dev.ringmaster.server.generation.Generation.ClientLeftException e) {
        LOG.log(System.Logger.Level.DEBUG, "client of " + ex.path() + " disconnected");
        ex.closeStream();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        reply(ex, ApiException.unavailable("shutting_down", "the server is shutting down", 5));
      } catch (ApiException e) {
        reply(ex, e);
      } catch (RequestException e) {
        reply(ex, fromHelidon(e.status(), e.safeMessage() ? e.getMessage() : null, maxBodyBytes));
      } catch (HttpException e) {
        reply(ex, fromHelidon(e.status(), null, maxBodyBytes));
      } catch (Exception | OutOfMemoryError | StackOverflowError e) {
        // A fault of ours: the trace goes to the log, the client gets no internals.
        LOG.log(System.Logger.Level.ERROR, "request to " + ex.path() + " failed", e);
        reply(ex, ApiException.internal("internal server error; the server log has the details"));
      }
    };
  }

  /**
   * One log line per refused request: the client's mistakes (4xx) at INFO and refusals for load or
   * shutdown (503) at WARNING, without stack traces; server faults are logged where they are
   * caught, with theirs.
   */
  static void logRefusal(String method, String path, ApiException e) {
    System.Logger.Level level =
        e.status() >= 500 ? System.Logger.Level.WARNING : System.Logger.Level.INFO;
    if (e.status() >= 500 && e.status() != 503) {
      level = System.Logger.Level.ERROR;
    }
    LOG.log(
        level,
        () ->
            e.status()
                + " "
                + method
                + " "
                + path
                + ": "
                + e.getMessage()
                + (e.param() != null ? " (param " + e.param() + ")" : ""));
  }

  private static ApiException fromHelidon(Status status, String message, long maxBodyBytes) {
    if (status.code() == 413) {
      return Exchange.tooLarge(maxBodyBytes);
    }
    int code = status.code() >= 400 && status.code() < 600 ? status.code() : 400;
    return new ApiException(
        code,
        code >= 500 ? "server_error" : "invalid_request_error",
        null,
        code >= 500 ? "internal_error" : "bad_request",
        message == null || message.isBlank() || looksInternal(message)
            ? (code == 400 ? "malformed HTTP request" : status.reasonPhrase())
            : message,
        0);
  }

  /**
   * Whether a transport message names Java internals (exception classes) that clients need not see.
   */
  private static boolean looksInternal(String message) {
    return message.contains("Exception") || message.contains("java.") || message.contains("\tat ");
  }

  private static void reply(Exchange ex, ApiException e) {
    logRefusal(ex.method(), ex.path(), e);
    if (ex.started()) {
      // Headers are gone already (a stream failed half-way); report in-band when possible.
      try {
        ex.sse().send(Json.error(e));
        ex.sse().done();
      } catch (RuntimeException ignored) {
        // The client is gone.
      }
      ex.closeStream();
      return;
    }
    try {
      ex.error(e);
    } catch (RuntimeException sendFailed) {
      LOG.log(System.Logger.Level.DEBUG, "could not send an error response", sendFailed);
    }
  }

  /** Formats errors raised by the HTTP layer before a handler runs. */
  public static DirectHandler transportErrors(long maxBodyBytes) {
    return (request, eventType, status, headers, message) -> {
      ApiException e = fromHelidon(status, message, maxBodyBytes);
      logRefusal(request.method(), request.path(), e);
      byte[] body = Json.string(Json.error(e)).getBytes(StandardCharsets.UTF_8);
      headers.set(HeaderNames.CONTENT_TYPE, "application/json");
      if (e.status() == 413) {
        headers.set(
            HeaderNames.CONNECTION, "close"); // the unread body makes the connection unusable
      }
      return DirectHandler.TransportResponse.builder()
          .status(Status.create(e.status()))
          .headers(headers)
          .entity(body)
          .build();
    };
  }
}
