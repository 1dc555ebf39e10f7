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
    return (req, res) -> {
      Exchange ex = new Exchange(req, res, maxBodyBytes);
      try {
        endpoint.handle(ex);
      } catch (ClientGoneException e) {
        ex.closeStream();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        reply(ex, ApiException.unavailable("shutting_down", "the server is shutting down", 5));
      } catch (ApiException e) {
        reply(ex, e);
      } catch (RequestException e) {
        reply(ex, fromHelidon(e.status(), e.getMessage(), maxBodyBytes));
      } catch (HttpException e) {
        reply(ex, fromHelidon(e.status(), e.getMessage(), maxBodyBytes));
      } catch (Exception | OutOfMemoryError | StackOverflowError e) {
        LOG.log(System.Logger.Level.ERROR, "request to " + ex.path() + " failed", e);
        reply(ex, ApiException.internal("internal error: " + e));
      }
    };
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
        message == null || message.isBlank() ? status.reasonPhrase() : message,
        0);
  }

  private static void reply(Exchange ex, ApiException e) {
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
