package dev.ringmaster.server;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import org.junit.jupiter.api.Test;

/** CORS for browser front-ends: preflights answered, allowed origins echoed, none by default. */
class CorsTest {
  private static final String APP = "https://app.example";

  private static HttpRequest preflight(TestServer s, String origin) {
    return HttpRequest.newBuilder(URI.create(s.url() + "/v1/chat/completions"))
        .method("OPTIONS", HttpRequest.BodyPublishers.noBody())
        .header("Origin", origin)
        .header("Access-Control-Request-Method", "POST")
        .header("Access-Control-Request-Headers", "authorization, content-type")
        .build();
  }

  @Test
  void allowedOriginsGetPreflightAndResponseHeaders() {
    try (TestServer s =
        TestServer.start(
            lm -> lm,
            ServerConfig.defaults().withAllowedOrigins(List.of(APP)).withApiKey("k"),
            TestServer.defaultBatch())) {
      HttpResponse<String> pre = s.send(preflight(s, APP));
      assertThat(pre.statusCode()).isEqualTo(204);
      assertThat(pre.headers().firstValue("access-control-allow-origin")).hasValue(APP);
      assertThat(pre.headers().firstValue("access-control-allow-methods").orElse(""))
          .contains("POST");
      assertThat(pre.headers().firstValue("access-control-allow-headers").orElse(""))
          .containsIgnoringCase("authorization");
      assertThat(pre.headers().firstValue("access-control-max-age")).isPresent();

      HttpResponse<String> get =
          s.send(
              HttpRequest.newBuilder(URI.create(s.url() + "/v1/models"))
                  .header("Origin", APP)
                  .header("Authorization", "Bearer k")
                  .build());
      assertThat(get.statusCode()).isEqualTo(200);
      assertThat(get.headers().firstValue("access-control-allow-origin")).hasValue(APP);

      HttpResponse<String> other = s.send(preflight(s, "https://evil.example"));
      assertThat(other.headers().firstValue("access-control-allow-origin")).isEmpty();
    }
  }

  @Test
  void aWildcardAllowsAnyOriginAndNoneIsTheDefault() {
    try (TestServer any =
        TestServer.start(
            lm -> lm,
            ServerConfig.defaults().withAllowedOrigins(List.of("*")),
            TestServer.defaultBatch())) {
      HttpResponse<String> pre = any.send(preflight(any, "https://x.example"));
      assertThat(pre.headers().firstValue("access-control-allow-origin")).hasValue("*");
    }
    try (TestServer none = TestServer.start()) {
      HttpResponse<String> pre = none.send(preflight(none, APP));
      assertThat(pre.headers().firstValue("access-control-allow-origin")).isEmpty();
      HttpResponse<String> get =
          none.send(
              HttpRequest.newBuilder(URI.create(none.url() + "/health"))
                  .header("Origin", APP)
                  .build());
      assertThat(get.headers().firstValue("access-control-allow-origin")).isEmpty();
    }
  }
}
