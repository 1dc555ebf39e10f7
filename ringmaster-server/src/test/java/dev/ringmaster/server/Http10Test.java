package dev.ringmaster.server;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** HTTP/1.0 clients are served: sized bodies, no chunking, the connection closed unless kept. */
class Http10Test {
  private static TestServer s;

  @BeforeAll
  static void start() {
    s = TestServer.start();
  }

  @AfterAll
  static void stop() {
    s.close();
  }

  @Test
  void healthAndGetEndpointsAnswerHttp10AndClose() {
    String r = RawHttp.exchange(s.url(), "GET /health HTTP/1.0\r\n\r\n");
    assertThat(RawHttp.status(r)).as(r).isEqualTo(200);
    assertThat(RawHttp.head(r).toLowerCase()).contains("connection: close");
    String models = RawHttp.exchange(s.url(), "GET /v1/models HTTP/1.0\r\nHost: x\r\n\r\n");
    assertThat(RawHttp.status(models)).isEqualTo(200);
    assertThat(RawHttp.head(models).toLowerCase()).doesNotContain("transfer-encoding");
    assertThat(RawHttp.body(models)).contains("\"tiny-moe\"");
  }

  /** An HTTP/1.0 completion request with {@code body} (and any extra header lines), its answer. */
  private static String post(String body, String... headers) {
    StringBuilder h = new StringBuilder();
    for (String line : headers) {
      h.append(line).append("\r\n");
    }
    return RawHttp.exchange(
        s.url(),
        "POST /v1/completions HTTP/1.0\r\n"
            + h
            + "Content-Length: "
            + body.length()
            + "\r\n\r\n"
            + body);
  }

  @Test
  void aPostWithABodyIsServed() {
    String r = post("{\"prompt\": [5, 6], \"max_tokens\": 3}", "Content-Type: application/json");
    assertThat(RawHttp.status(r)).as(r).isEqualTo(200);
    String head = RawHttp.head(r).toLowerCase();
    assertThat(head).contains("content-length:").doesNotContain("chunked");
    assertThat(TestServer.json(RawHttp.body(r)).get("choices")).hasSize(1);
  }

  @Test
  void aLongerGenerationIsNotTakenForAClientThatLeft() {
    // A request without keep-alive is the connection's last: that must not read as the client
    // hanging up while it waits for 40 tokens (it was cancelled with a 500 after 50 ms).
    String r = post("{\"prompt\": [5, 6], \"max_tokens\": 40, \"ignore_eos\": true}");
    assertThat(RawHttp.status(r)).as(r).isEqualTo(200);
    assertThat(TestServer.json(RawHttp.body(r)).get("usage").get("completion_tokens").asInt())
        .isEqualTo(40);
  }

  @Test
  void aStreamIsSentUnchunkedAndEndsWithTheConnection() {
    String r =
        post("{\"prompt\": [5, 6], \"max_tokens\": 4, \"stream\": true, \"ignore_eos\": true}");
    assertThat(RawHttp.status(r)).as(r).isEqualTo(200);
    assertThat(RawHttp.head(r).toLowerCase()).doesNotContain("chunked");
    String events = RawHttp.body(r);
    assertThat(events).startsWith("data: {").endsWith("data: [DONE]\n\n");
  }

  @Test
  void keepAliveIsHonoured() throws Exception {
    URI u = URI.create(s.url());
    try (Socket sock = new Socket(u.getHost(), u.getPort())) {
      sock.setSoTimeout(30_000);
      OutputStream out = sock.getOutputStream();
      BufferedReader in =
          new BufferedReader(new InputStreamReader(sock.getInputStream(), StandardCharsets.UTF_8));
      for (int i = 0; i < 2; i++) {
        out.write(
            "GET /version HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n"
                .getBytes(StandardCharsets.US_ASCII));
        out.flush();
        assertThat(in.readLine()).startsWith("HTTP/1.").contains(" 200");
        int length = -1;
        boolean keepAlive = false;
        for (String line; !(line = in.readLine()).isEmpty(); ) {
          String l = line.toLowerCase();
          if (l.startsWith("content-length:")) {
            length = Integer.parseInt(l.substring(15).strip());
          }
          keepAlive |= l.equals("connection: keep-alive");
        }
        assertThat(keepAlive).isTrue();
        char[] b = new char[length];
        int read = 0;
        while (read < length) {
          read += in.read(b, read, length - read);
        }
        assertThat(new String(b)).contains("\"version\"");
      }
    }
  }
}
