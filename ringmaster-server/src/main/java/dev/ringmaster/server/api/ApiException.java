package dev.ringmaster.server.api;

/**
 * A request that cannot be served, reported to the client as an OpenAI-style error object: {@code
 * {"error": {"message", "type", "param", "code"}}} with an HTTP status.
 */
public final class ApiException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final int status;
  private final String type;
  private final String param;
  private final String code;
  private final int retryAfterSeconds;

  /** An error with every field given. */
  public ApiException(
      int status, String type, String param, String code, String message, int retryAfterSeconds) {
    super(message);
    this.status = status;
    this.type = type;
    this.param = param;
    this.code = code;
    this.retryAfterSeconds = retryAfterSeconds;
  }

  /** 400: the request is malformed or a parameter is out of range. */
  public static ApiException invalid(String param, String message) {
    return new ApiException(400, "invalid_request_error", param, "invalid_value", message, 0);
  }

  /** 400: a parameter the server does not implement was given a non-default value. */
  public static ApiException unsupported(String param, String message) {
    return new ApiException(
        400, "invalid_request_error", param, "unsupported_parameter", message, 0);
  }

  /** 400: the prompt and the requested tokens do not fit the model's context. */
  public static ApiException contextExceeded(String param, String message) {
    return new ApiException(
        400, "invalid_request_error", param, "context_length_exceeded", message, 0);
  }

  /** 401: missing or wrong API key. */
  public static ApiException unauthorized() {
    return new ApiException(
        401,
        "invalid_request_error",
        null,
        "invalid_api_key",
        "Incorrect or missing API key: send 'Authorization: Bearer <key>'",
        0);
  }

  /** 404: no such route or model. */
  public static ApiException notFound(String param, String code, String message) {
    return new ApiException(404, "invalid_request_error", param, code, message, 0);
  }

  /** 503: overloaded or shutting down; the client should retry after the given seconds. */
  public static ApiException unavailable(String code, String message, int retryAfterSeconds) {
    return new ApiException(503, "server_error", null, code, message, retryAfterSeconds);
  }

  /** 500: a fault inside the server while serving this request. */
  public static ApiException internal(String message) {
    return new ApiException(500, "server_error", null, "internal_error", message, 0);
  }

  /** HTTP status. */
  public int status() {
    return status;
  }

  /** OpenAI error type. */
  public String type() {
    return type;
  }

  /** Offending parameter, or null. */
  public String param() {
    return param;
  }

  /** Machine-readable code, or null. */
  public String code() {
    return code;
  }

  /** Seconds for a {@code Retry-After} header, 0 for none. */
  public int retryAfterSeconds() {
    return retryAfterSeconds;
  }
}
