package dev.ringmaster.util;

import java.io.PrintStream;
import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import me.tongfei.progressbar.ProgressBarStyle;

/**
 * Progress of long work (loading or writing weights, capturing graphs, benchmarks): a progress bar
 * on a terminal, plain log lines on stderr at every 10% otherwise (logs, CI, pipes).
 */
public final class Progress implements AutoCloseable {
  private final String task;
  private final long total;
  private final String unit;
  private final ProgressBar bar;
  private final PrintStream log; // null: silent
  private long done;
  private int lastDecile = -1;
  private final long start = System.nanoTime();

  private Progress(String task, long total, String unit, boolean interactive, boolean silent) {
    this.task = task;
    this.total = Math.max(total, 1);
    this.unit = unit;
    this.log = silent ? null : System.err;
    if (interactive && !silent) {
      ProgressBarBuilder b =
          new ProgressBarBuilder()
              .setTaskName(task)
              .setInitialMax(this.total)
              .setStyle(ProgressBarStyle.ASCII)
              .setConsumer(new me.tongfei.progressbar.ConsoleProgressBarConsumer(System.err))
              .setUpdateIntervalMillis(200);
      if (unit.equals("B")) {
        b.setUnit(" MB", 1 << 20);
      } else {
        b.setUnit(" " + unit, 1);
      }
      this.bar = b.build();
    } else {
      this.bar = null;
    }
  }

  /** Starts tracking {@code total} units ("B" for bytes, else a count noun). */
  public static Progress start(String task, long total, String unit) {
    boolean interactive = System.console() != null && System.getenv("CI") == null;
    return new Progress(task, total, unit, interactive, false);
  }

  /**
   * As {@link #start} where {@code report}, else a tracker that prints nothing (the ranks of a
   * tensor-parallel model besides the first do the same work at the same pace).
   */
  public static Progress startIf(boolean report, String task, long total, String unit) {
    return report ? start(task, total, unit) : new Progress(task, total, unit, false, true);
  }

  /** Records {@code n} more units done. */
  public void step(long n) {
    done += n;
    if (bar != null) {
      bar.stepTo(Math.min(done, total));
      return;
    }
    int decile = (int) (10 * Math.min(done, total) / total);
    if (log != null && decile != lastDecile && (decile % 2 == 0 || decile == 10)) {
      lastDecile = decile;
      log.printf(
          "%s: %d%% (%s of %s)%n", task, decile * 10, format(Math.min(done, total)), format(total));
    }
  }

  private String format(long v) {
    return unit.equals("B") ? String.format("%.1f MB", v / 1048576.0) : v + " " + unit;
  }

  @Override
  public void close() {
    if (bar != null) {
      bar.close();
    } else if (lastDecile != 10) {
      lastDecile = 9;
      step(0);
    }
    double secs = (System.nanoTime() - start) / 1e9;
    if (log != null && bar == null && secs > 1) {
      log.printf("%s: done in %.1f s%n", task, secs);
    }
  }
}
