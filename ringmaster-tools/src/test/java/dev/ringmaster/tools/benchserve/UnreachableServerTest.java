package dev.ringmaster.tools.benchserve;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.ServerSocket;
import org.junit.jupiter.api.Test;

/** A server that is not there: a clear error naming it, before any timing starts. */
class UnreachableServerTest {
  static BenchServeConfig config(String url, String model, String backend) {
    return new BenchServeConfig(
        new BenchServeConfig.Target(backend, url, model, null, null, null),
        DatasetsTest.spec("random", null, 4, null),
        new BenchServeConfig.Load(
            Double.POSITIVE_INFINITY, null, 1, 1, false, false, null, true, false),
        null,
        false);
  }

  static String closedPortUrl() throws Exception {
    try (ServerSocket s = new ServerSocket(0)) {
      return "http://127.0.0.1:" + s.getLocalPort();
    }
  }

  @Test
  void withoutAModelTheModelListCannotBeFetched() throws Exception {
    String url = closedPortUrl();
    PrintStream log = new PrintStream(new ByteArrayOutputStream());
    assertThatThrownBy(() -> BenchServe.run(config(url, null, "sglang"), log))
        .isInstanceOf(BenchServeException.class)
        .hasMessageContaining("cannot reach the server at " + url)
        .hasMessageContaining("ConnectException")
        .hasMessageContaining("--base-url");
  }

  @Test
  void withAModelTheWarmUpFailsNamingTheCause() throws Exception {
    String url = closedPortUrl();
    PrintStream log = new PrintStream(new ByteArrayOutputStream());
    String model = DatasetsTest.tokenizerDir().toString();
    assertThatThrownBy(() -> BenchServe.run(config(url, model, "openai"), log))
        .isInstanceOf(BenchServeException.class)
        .hasMessageContaining("warm-up failed")
        .hasMessageContaining("ConnectException");
  }

  @Test
  void badFlagsAreRefusedBeforeAnythingIsSent() {
    PrintStream log = new PrintStream(new ByteArrayOutputStream());
    assertThatThrownBy(() -> BenchServe.run(config("http://127.0.0.1:1", "m", "tgi"), log))
        .hasMessageContaining("--backend tgi is unknown");
    assertThatThrownBy(() -> BenchServe.run(config("127.0.0.1:1", "m", "sglang"), log))
        .hasMessageContaining("must start with http://");
  }
}
