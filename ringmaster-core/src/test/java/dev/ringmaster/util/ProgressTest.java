package dev.ringmaster.util;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** Progress lines without a terminal, and the silent tracker of the ranks that do not report. */
class ProgressTest {
  private static String stderrOf(Runnable r) {
    PrintStream old = System.err;
    ByteArrayOutputStream buf = new ByteArrayOutputStream();
    System.setErr(new PrintStream(buf, true, StandardCharsets.UTF_8));
    try {
      r.run();
    } finally {
      System.setErr(old);
    }
    return buf.toString(StandardCharsets.UTF_8);
  }

  private static void work(Progress p) {
    for (int i = 0; i < 10; i++) {
      p.step(10);
    }
    p.close();
  }

  @Test
  void aReportingTrackerPrintsEveryOtherDecile() {
    String out = stderrOf(() -> work(Progress.startIf(true, "uploading weights", 100, "parts")));
    assertThat(out)
        .contains("uploading weights: 20% (20 parts of 100 parts)")
        .contains("uploading weights: 100% (100 parts of 100 parts)")
        .doesNotContain("10% (");
  }

  @Test
  void aSilentTrackerPrintsNothing() {
    assertThat(stderrOf(() -> work(Progress.startIf(false, "uploading weights", 100, "parts"))))
        .isEmpty();
  }
}
