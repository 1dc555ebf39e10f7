package dev.ringmaster.server;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Chunked request bodies: chunk extensions are valid HTTP/1.1 and ignored; a malformed or
 * overflowing chunk size is the client's error (400), and no response body shows internals.
 */
class ChunkedBodyTest {
  private static TestServer s;

  @BeforeAll
  static void start() {
    s = TestServer.start();
  }

  @AfterAll
  static void stop() {
    s.close();
  }

  private static String post(String chunks) {
    return "POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        + "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        + chunks;
  }

  @Test
  void aChunkExtensionIsIgnored() {
    String body = "{\"prompt\": [5, 6], \"max_tokens\": 2}";
    String first = body.substring(0, 9);
    String rest = body.substring(9);
    String r =
        RawHttp.exchange(
            s.url(),
            post(
                "9;ext=1\r\n"
                    + first
                    + "\r\n"
                    + Integer.toHexString(rest.length())
                    + " ; name=\"v\"\r\n"
                    + rest
                    + "\r\n0\r\n\r\n"));
    assertThat(RawHttp.status(r)).as(r).isEqualTo(200);
    assertThat(RawHttp.body(r)).contains("\"choices\"");
  }

  @Test
  void overflowingOrMalformedChunkSizesAre400WithoutInternals() {
    for (String size : new String[] {"fffffffffffff", "zz", "-5", "9x;ext"}) {
      String r = RawHttp.exchange(s.url(), post(size + "\r\n{\"prompt\": 1}\r\n0\r\n\r\n"));
      assertThat(RawHttp.status(r)).as(size + ": " + r).isEqualTo(400);
      assertThat(r).doesNotContain("Exception").doesNotContain("java.").contains("\"error\"");
    }
  }
}
