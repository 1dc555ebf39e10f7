package dev.ringmaster.server.http;

/** A request handler; it may throw {@link dev.ringmaster.server.api.ApiException} for 4xx/5xx. */
@FunctionalInterface
public interface Endpoint {
  /** Serves one request. */
  void handle(Exchange exchange) throws Exception;
}
