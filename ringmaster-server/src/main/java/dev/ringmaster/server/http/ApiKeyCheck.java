package dev.ringmaster.server.http;

import dev.ringmaster.server.api.ApiException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;

/** Requires {@code Authorization: Bearer <key>} before an endpoint runs. */
public final class ApiKeyCheck {
  private ApiKeyCheck() {}

  /** The endpoint behind a key check; with a null key, the endpoint itself. */
  public static Endpoint require(String key, Endpoint endpoint) {
    if (key == null) {
      return endpoint;
    }
    byte[] expected = ("Bearer " + key).getBytes(StandardCharsets.UTF_8);
    return ex -> {
      String got = ex.header("Authorization");
      // Constant-time comparison: response timing must not reveal how much of a guess was right.
      if (got == null
          || !MessageDigest.isEqual(expected, got.strip().getBytes(StandardCharsets.UTF_8))) {
        throw ApiException.unauthorized();
      }
      endpoint.handle(ex);
    };
  }
}
