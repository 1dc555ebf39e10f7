package dev.ringmaster.engine.bench;

import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.util.function.LongSupplier;

/**
 * Tells when the JIT has settled during a warm-up: the JVM's accumulated compilation time over the
 * last {@value #WINDOW} rounds is under {@value #SHARE_PERCENT}% of those rounds' wall time. While
 * the compiler threads still work, the kernels run code that is about to be replaced (and, on a
 * machine with few cores, share the cores with the compiler); once they are idle, the timed steps
 * measure the code a long-running server executes. Where the JVM does not report compilation time,
 * no window ever settles and a warm-up runs its most rounds.
 */
final class JitSettling {
  /** Rounds the settling test looks back over. */
  static final int WINDOW = 10;

  /** The share of the window's wall time the JIT may still spend compiling, in percent. */
  static final int SHARE_PERCENT = 2;

  private final LongSupplier compileMillisSoFar;
  private final LongSupplier clockNanos;
  private final boolean measurable;
  private final long[] wallNanos = new long[WINDOW];
  private final long[] compileMillis = new long[WINDOW];
  private int rounds;
  private long roundStartNanos;
  private long roundStartCompileMillis;

  /** Settling of this JVM's JIT, timed by {@link System#nanoTime}. */
  JitSettling() {
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
  void startRound() {
    roundStartNanos = clockNanos.getAsLong();
    roundStartCompileMillis = compileMillisSoFar.getAsLong();
  }

  /** Marks the end of the round started last. */
  void endRound() {
    int slot = rounds % WINDOW;
    wallNanos[slot] = clockNanos.getAsLong() - roundStartNanos;
    compileMillis[slot] = compileMillisSoFar.getAsLong() - roundStartCompileMillis;
    rounds++;
  }

  /** Whether the last {@value #WINDOW} rounds compiled under the share of their time. */
  boolean settled() {
    if (!measurable || rounds < WINDOW) {
      return false;
    }
    long wall = 0;
    long compile = 0;
    for (int i = 0; i < WINDOW; i++) {
      wall += wallNanos[i];
      compile += compileMillis[i];
    }
    return compile * 1_000_000L * 100 < wall * SHARE_PERCENT;
  }
}
