package dev.ringmaster.tools.benchserve;

import java.net.http.HttpRequest;

/**
 * The {@code Authorization: Bearer} header every request of the client carries when a key is set.
 */
final class ApiKey {
  private ApiKey() {}

  /** {@code b} with the bearer header when {@code apiKey} is set, else unchanged. */
  static HttpRequest.Builder authorize(HttpRequest.Builder b, String apiKey) {
    return apiKey == null || apiKey.isEmpty() ? b : b.header("Authorization", "Bearer " + apiKey);
  }
}
