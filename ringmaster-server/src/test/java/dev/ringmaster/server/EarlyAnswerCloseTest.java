package dev.ringmaster.server;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A server that answers before it has read the whole request (a body over the limit is refused on
 * its headers) and then closes the connection must not reset it while the client is still sending:
 * a client whose write fails may drop the answer it has already received (the JDK client does).
 */
class EarlyAnswerCloseTest {
  private static final int LIMIT = 16 * 1024;
  private static TestServer s;

  @BeforeAll
  static void start() {
    s =
        TestServer.start(
            lm -> lm,
            ServerConfig.defaults().withMaxRequestBytes(LIMIT),
            TestServer.defaultBatch());
  }

  @AfterAll
  static void stop() {
    s.close();
  }

  @Test
  void aBodySentAfterThe413DoesNotResetTheConnection() throws Exception {
    byte[] body = ("{\"prompt\": \"" + "a".repeat(LIMIT) + "\"}").getBytes(StandardCharsets.UTF_8);
    URI u = URI.create(s.url());
    try (Socket c = new Socket(u.getHost(), u.getPort())) {
      c.setSoTimeout(10_000);
      OutputStream out = c.getOutputStream();
      // The headers alone, as the JDK client sends them: the server answers on them.
      out.write(
          ("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  + "Content-Length: "
                  + body.length
                  + "\r\n\r\n")
              .getBytes(StandardCharsets.ISO_8859_1));
      out.flush();
      InputStream in = c.getInputStream();
      String answer = RawHttp.readAll(in);
      assertThat(RawHttp.status(answer)).as(answer).isEqualTo(413);
      assertThat(RawHttp.head(answer).toLowerCase()).contains("connection: close");
      // A client slower than the server sends its body only now; the second write is the one a
      // reset (an answer to the first) would fail.
      Thread.sleep(300);
      out.write(body, 0, body.length - 100);
      out.flush();
      Thread.sleep(200);
      out.write(body, body.length - 100, 100);
      out.flush();
      // The server ended its side right after the answer, not once the client went quiet.
      c.setSoTimeout(1_000);
      assertThat(in.read()).isEqualTo(-1);
    }
  }

  @Test
  void aClientThatNeitherSendsNorClosesIsClosedAfterAQuietSpell() throws Exception {
    URI u = URI.create(s.url());
    try (Socket c = new Socket(u.getHost(), u.getPort())) {
      c.setSoTimeout(10_000);
      OutputStream out = c.getOutputStream();
      out.write(
          ("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: "
                  + (LIMIT + 1)
                  + "\r\n\r\n")
              .getBytes(StandardCharsets.ISO_8859_1));
      out.flush();
      InputStream in = c.getInputStream();
      assertThat(RawHttp.status(RawHttp.readAll(in))).isEqualTo(413);
      assertThat(in.read()).isEqualTo(-1);
      // The server reads on until the client has been silent for 2 s, then closes: a byte sent
      // after that is answered with a reset, which fails the next write.
      Thread.sleep(3_500);
      boolean refused = false;
      try {
        out.write('x');
        out.flush();
        Thread.sleep(200);
        out.write('x');
        out.flush();
      } catch (java.io.IOException e) {
        refused = true;
      }
      assertThat(refused)
          .as("the server still reads the connection after 3.5 s of silence")
          .isTrue();
    }
  }

  @Test
  void freshJdkClientsAlwaysGetThe413() {
    String big = "{\"prompt\": \"" + "a".repeat(LIMIT) + "\"}";
    for (HttpClient.Version v : HttpClient.Version.values()) {
      for (int i = 0; i < 30; i++) {
        // A new client each time: the first request on a connection carries the h2c upgrade
        // headers (HTTP_2), and the body goes out after them, often after the answer.
        try (HttpClient http =
            HttpClient.newBuilder().version(v).connectTimeout(Duration.ofSeconds(10)).build()) {
          HttpResponse<String> r =
              http.send(
                  HttpRequest.newBuilder(URI.create(s.url() + "/v1/completions"))
                      .timeout(Duration.ofSeconds(30))
                      .header("Content-Type", "application/json")
                      .POST(HttpRequest.BodyPublishers.ofString(big))
                      .build(),
                  HttpResponse.BodyHandlers.ofString());
          BadInputTest.assertError(r, 413, null);
        } catch (java.io.IOException e) {
          throw new AssertionError(v + " request " + i + " got no answer", e);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new AssertionError(e);
        }
      }
    }
  }
}
