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

/** A client that drops mid-stream: its request stops within a step or two and frees its blocks. */
class DisconnectTest {
  private static TestServer s;

  @BeforeAll
  static void start() {
    // 20 ms per step: a 200-token request would take 4 s if nobody stopped it.
    s = TestServer.start(TestServer.slow(20), ServerConfig.defaults(), TestServer.defaultBatch());
  }

  @AfterAll
  static void stop() {
    s.close();
  }

  private void streamThenDrop(String path, String body) throws Exception {
    URI u = URI.create(s.url());
    try (Socket sock = new Socket(u.getHost(), u.getPort())) {
      byte[] b = body.getBytes(StandardCharsets.UTF_8);
      OutputStream out = sock.getOutputStream();
      out.write(
          ("POST "
                  + path
                  + " HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                  + "Content-Length: "
                  + b.length
                  + "\r\n\r\n")
              .getBytes(StandardCharsets.US_ASCII));
      out.write(b);
      out.flush();
      BufferedReader in =
          new BufferedReader(new InputStreamReader(sock.getInputStream(), StandardCharsets.UTF_8));
      int events = 0;
      for (String line; (line = in.readLine()) != null; ) {
        if (line.startsWith("data: ") && ++events == 2) {
          break;
        }
      }
      assertThat(events).isEqualTo(2);
    }
  }

  @Test
  void aDroppedNonStreamingRequestIsCancelled() throws Exception {
    double abortedBefore = s.metric("ringmaster:num_aborted_requests_total");
    double genBefore = s.metric("ringmaster:generation_tokens_total");
    URI u = URI.create(s.url());
    byte[] b =
        "{\"prompt\": [5, 6, 7], \"max_tokens\": 200, \"ignore_eos\": true}"
            .getBytes(StandardCharsets.UTF_8);
    try (Socket sock = new Socket(u.getHost(), u.getPort())) {
      OutputStream out = sock.getOutputStream();
      out.write(
          ("POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                  + "Content-Length: "
                  + b.length
                  + "\r\n\r\n")
              .getBytes(StandardCharsets.US_ASCII));
      out.write(b);
      out.flush();
      while (s.engine.stats().running() == 0) {
        Thread.sleep(5);
      }
      Thread.sleep(100); // a few steps run, then the client hangs up without reading
    }
    s.awaitDrained();
    assertThat(s.metric("ringmaster:num_aborted_requests_total") - abortedBefore).isEqualTo(1);
    assertThat(s.metric("ringmaster:generation_tokens_total") - genBefore).isLessThan(40);
  }

  @Test
  void droppedStreamsAreCancelledAndFreeTheirBlocks() throws Exception {
    double abortedBefore = s.metric("ringmaster:num_aborted_requests_total");
    double genBefore = s.metric("ringmaster:generation_tokens_total");
    long t0 = System.nanoTime();
    streamThenDrop(
        "/v1/completions",
        "{\"prompt\": [5, 6, 7], \"stream\": true, \"max_tokens\": 200, \"ignore_eos\": true}");
    streamThenDrop(
        "/generate",
        "{\"input_ids\": [5, 6, 7], \"stream\": true, \"sampling_params\":"
            + " {\"max_new_tokens\": 200, \"ignore_eos\": true}}");
    s.awaitDrained();
    double seconds = (System.nanoTime() - t0) / 1e9;
    // A generous wall-clock bound (CI shares two cores); the token count below is the real check.
    assertThat(seconds).isLessThan(15.0);
    assertThat(s.engine.pool().used()).isZero();
    assertThat(s.metric("ringmaster:num_aborted_requests_total") - abortedBefore).isEqualTo(2);
    // Each stopped after a handful of tokens, far from its 200.
    assertThat(s.metric("ringmaster:generation_tokens_total") - genBefore).isLessThan(40);
  }
}
