package dev.ringmaster.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import org.junit.jupiter.api.Test;

/** A port in use fails the start at once, naming the port, instead of serving on port -1. */
class BusyPortTest {
  @Test
  void startingOnABusyPortThrowsNamingIt() throws Exception {
    try (ServerSocket taken = new ServerSocket()) {
      taken.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
      int port = taken.getLocalPort();
      long t0 = System.nanoTime();
      assertThatThrownBy(
              () ->
                  TestServer.start(
                      lm -> lm, ServerConfig.defaults().withPort(port), TestServer.defaultBatch()))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining(":" + port);
      assertThat((System.nanoTime() - t0) / 1e9).isLessThan(20);
    }
  }
}
