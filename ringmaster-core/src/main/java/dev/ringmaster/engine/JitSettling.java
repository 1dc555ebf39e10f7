package dev.ringmaster.engine;

import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.util.function.LongSupplier;

/**
 * Tells when the JIT has settled during a warm-up (the engine's at load and {@code bench
 * one-batch}'s): the JVM's accumulated compilation time over the last rounds is under {@value
 * #SHARE_PERCENT}% of those rounds' wall time. The window is the last {@value #WINDOW} rounds, or
 * fewer (at least {@value #MIN_WINDOW}) where those already took {@value #LONG_WINDOW_MILLIS} ms: a
 * large model's rounds are long, and ten of them would take minutes. While the compiler threads
 * still work, the kernels run code that is about to be replaced (and, on a machine with few cores,
 * share the cores with the compiler); once they are idle, the timed steps measure the code a
 * long-running server executes. Where the JVM does not report compilation time, no window ever
 * settles and a warm-up runs its most rounds.
 */
public final class JitSettling {
  /** Rounds the settling test looks back over. */
  public static final int WINDOW = 10;

  /** The fewest rounds a window holds. */
  public static final int MIN_WINDOW = 3;

  /** Wall time after which a window of at least {@value #MIN_WINDOW} rounds is long enough. */
  public static final long LONG_WINDOW_MILLIS = 2000;

  /** The share of the window's wall time the JIT may still spend compiling, in percent. */
  public static final int SHARE_PERCENT = 2;

  private final LongSupplier compileMillisSoFar;
  private final LongSupplier clockNanos;
  private final boolean measurable;
  private final long[] wallNanos = new long[WINDOW];
  private final long[] compileMillis = new long[WINDOW];
  private int rounds;
  private long roundStartNanos;
  private long roundStartCompileMillis;

  /** Settling of this JVM's JIT, timed by {@link System#nanoTime}. */
  public JitSettling() {
    CompilationMXBean compiler = ManagementFactory.getCompilationMXBean();
    this.measurable = compiler != null && compiler.isCompilationTimeMonitoringSupported();
    this.compileMillisSoFar = measurable ? compiler::getTotalCompilationTime : () -> 0;
    this.clockNanos = System::nanoTime;
  }

  /**
   * Settling read from the given clocks (tests).
   *
   * @param compileMillisSoFar accumulated compilation time in milliseconds
   * @param clockNanos wall clock in nanoseconds
   * @param measurable whether compilation time is reported at all
   */
  JitSettling(LongSupplier compileMillisSoFar, LongSupplier clockNanos, boolean measurable) {
    this.compileMillisSoFar = compileMillisSoFar;
    this.clockNanos = clockNanos;
    this.measurable = measurable;
  }

  /** Marks the start of a round. */
  public void startRound() {
    roundStartNanos = clockNanos.getAsLong();
    roundStartCompileMillis = compileMillisSoFar.getAsLong();
  }

  /** Marks the end of the round started last. */
  public void endRound() {
    int slot = rounds % WINDOW;
    wallNanos[slot] = clockNanos.getAsLong() - roundStartNanos;
    compileMillis[slot] = compileMillisSoFar.getAsLong() - roundStartCompileMillis;
    rounds++;
  }

  /** Whether the rounds of the window compiled under the share of their time. */
  public boolean settled() {
    if (!measurable) {
      return false;
    }
    long wall = 0;
    long compile = 0;
    for (int n = 1; n <= Math.min(rounds, WINDOW); n++) {
      int slot = Math.floorMod(rounds - n, WINDOW);
      wall += wallNanos[slot];
      compile += compileMillis[slot];
      if (n == WINDOW || (n >= MIN_WINDOW && wall >= LONG_WINDOW_MILLIS * 1_000_000L)) {
        return compile * 1_000_000L * 100 < wall * SHARE_PERCENT;
      }
    }
    return false;
  }
}
