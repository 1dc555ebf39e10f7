package dev.ringmaster.server;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** A client's mistake is one INFO line without a stack trace; SEVERE is kept for server faults. */
class ClientErrorLoggingTest {
  private static TestServer s;
  private static final List<LogRecord> records = new CopyOnWriteArrayList<>();
  private static final Logger ROOT = Logger.getLogger("");
  private static final Handler CAPTURE =
      new Handler() {
        @Override
        public void publish(LogRecord r) {
          if (r.getLoggerName() != null
              && (r.getLoggerName().startsWith("dev.ringmaster")
                  || r.getLoggerName().startsWith("io.helidon"))) {
            records.add(r);
          }
        }

        @Override
        public void flush() {}

        @Override
        public void close() {}
      };

  @BeforeAll
  static void start() {
    s = TestServer.start();
    ROOT.addHandler(CAPTURE);
  }

  @AfterAll
  static void stop() {
    ROOT.removeHandler(CAPTURE);
    s.close();
  }

  @Test
  void clientMistakesAreOneInfoLineEach() {
    records.clear();
    BadInputTest.assertError(s.post("/v1/completions", "{\"prompt\": "), 400, null);
    BadInputTest.assertError(
        s.post("/v1/completions", "{\"model\": \"gpt-9\", \"prompt\": \"hi\"}"), 404, "model");
    BadInputTest.assertError(
        s.post("/v1/completions", "{\"prompt\": \"hi\", \"top_p\": 7}"), 400, "top_p");
    assertThat(records).noneMatch(r -> r.getLevel().intValue() >= Level.WARNING.intValue());
    assertThat(records).noneMatch(r -> r.getThrown() != null);
    List<String> lines = records.stream().map(LogRecord::getMessage).toList();
    assertThat(lines).hasSize(3);
    assertThat(lines.get(0)).startsWith("400 POST /v1/completions: malformed JSON");
    assertThat(lines.get(1)).startsWith("404 POST /v1/completions").contains("gpt-9");
    assertThat(lines.get(2)).contains("top_p");
  }
}
