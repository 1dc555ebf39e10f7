package dev.ringmaster.server;

import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * How the HTTP server listens and what it accepts.
 *
 * @param host address to bind
 * @param port port to bind (0 = any free port)
 * @param apiKey when not null, every endpoint but {@code /health} requires {@code Authorization:
 *     Bearer <apiKey>}
 * @param maxRequestBytes largest request body accepted
 * @param maxChoices largest {@code n} accepted
 * @param shutdownTimeout how long a graceful shutdown waits for running requests
 * @param flags the launch flags, reported by {@code /get_server_info}
 * @param allowedOrigins browser origins allowed to call the API (CORS), {@code *} for any; empty
 *     for none (no CORS headers are sent)
 */
public record ServerConfig(
    String host,
    int port,
    String apiKey,
    long maxRequestBytes,
    int maxChoices,
    Duration shutdownTimeout,
    Map<String, Object> flags,
    List<String> allowedOrigins) {

  /** Copies the flag map, keeping its order, and the origins. */
  public ServerConfig {
    flags = Collections.unmodifiableMap(new LinkedHashMap<>(flags));
    allowedOrigins = List.copyOf(allowedOrigins);
  }

  /** A configuration without CORS. */
  public ServerConfig(
      String host,
      int port,
      String apiKey,
      long maxRequestBytes,
      int maxChoices,
      Duration shutdownTimeout,
      Map<String, Object> flags) {
    this(host, port, apiKey, maxRequestBytes, maxChoices, shutdownTimeout, flags, List.of());
  }

  /** Loopback, a free port, no key, 8 MiB bodies, n up to 16, 30 s drain. */
  public static ServerConfig defaults() {
    return new ServerConfig("127.0.0.1", 0, null, 8L << 20, 16, Duration.ofSeconds(30), Map.of());
  }

  /** A copy with another port. */
  public ServerConfig withPort(int p) {
    return new ServerConfig(
        host, p, apiKey, maxRequestBytes, maxChoices, shutdownTimeout, flags, allowedOrigins);
  }

  /** A copy with an API key. */
  public ServerConfig withApiKey(String key) {
    return new ServerConfig(
        host, port, key, maxRequestBytes, maxChoices, shutdownTimeout, flags, allowedOrigins);
  }

  /** A copy with another body limit. */
  public ServerConfig withMaxRequestBytes(long max) {
    return new ServerConfig(
        host, port, apiKey, max, maxChoices, shutdownTimeout, flags, allowedOrigins);
  }

  /** A copy with other allowed CORS origins. */
  public ServerConfig withAllowedOrigins(List<String> origins) {
    return new ServerConfig(
        host, port, apiKey, maxRequestBytes, maxChoices, shutdownTimeout, flags, origins);
  }
}
