package dev.ringmaster.server.http;

import java.util.List;

/**
 * Cross-origin access for browser front-ends: the origins given by {@code --allowed-origins} (or
 * {@code *}) get {@code Access-Control-Allow-Origin} on every response, and preflight {@code
 * OPTIONS} requests are answered with the methods and headers the API takes. With no origins
 * configured no CORS header is ever sent, so browsers keep the same-origin rule.
 */
public final class Cors {
  /** Seconds a browser may cache a preflight answer. */
  static final int MAX_AGE_SECONDS = 86400;

  private static final String METHODS = "GET, POST, OPTIONS";
  private static final String HEADERS = "Authorization, Content-Type";
  private final List<String> origins;

  /** A policy over these origins ({@code *} for any). */
  public Cors(List<String> origins) {
    this.origins = List.copyOf(origins);
  }

  /** The value of {@code Access-Control-Allow-Origin} for a request's origin, or null for none. */
  String allow(String origin) {
    if (origin == null || origins.isEmpty()) {
      return null;
    }
    if (origins.contains("*")) {
      return "*";
    }
    return origins.contains(origin) ? origin : null;
  }

  /** Adds the CORS headers a normal response carries for an allowed origin. */
  public void decorate(Exchange ex) {
    String allowed = allow(ex.header("Origin"));
    if (allowed != null) {
      ex.responseHeader("Access-Control-Allow-Origin", allowed);
      if (!"*".equals(allowed)) {
        ex.responseHeader("Vary", "Origin");
      }
    }
  }

  /**
   * Answers a preflight: 204 with the allowed origin, methods, headers and how long to cache them;
   * a 204 without them (the browser then refuses the call) when the origin is not allowed.
   */
  public Endpoint preflight() {
    return ex -> {
      ex.responseHeader("Allow", METHODS);
      String allowed = allow(ex.header("Origin"));
      if (allowed != null) {
        ex.responseHeader("Access-Control-Allow-Origin", allowed);
        if (!"*".equals(allowed)) {
          ex.responseHeader("Vary", "Origin");
        }
        ex.responseHeader("Access-Control-Allow-Methods", METHODS);
        String asked = ex.header("Access-Control-Request-Headers");
        ex.responseHeader(
            "Access-Control-Allow-Headers", asked != null && !asked.isBlank() ? asked : HEADERS);
        ex.responseHeader("Access-Control-Max-Age", String.valueOf(MAX_AGE_SECONDS));
      }
      ex.empty(204);
    };
  }
}
