package dev.ringmaster.backend.cpu;

import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.util.function.BooleanSupplier;

/**
 * Whether the JIT has compiled anything since this instance was last asked, from the JVM's total
 * compilation time. On a machine with few cores a compiler thread takes a core from the kernels,
 * and a parallel region timed meanwhile can take milliseconds: such a timing says nothing about
 * what regions cost once the code is compiled. Where the JVM does not report compilation time the
 * answer is always false. One instance per user: asking consumes the change. Callers on several
 * threads may race on the last total seen; at worst one slow timing is kept or dropped wrongly.
 */
final class JitActivity implements BooleanSupplier {
  private static final CompilationMXBean JIT = ManagementFactory.getCompilationMXBean();
  private static final boolean SUPPORTED =
      JIT != null && JIT.isCompilationTimeMonitoringSupported();

  private long lastTotalMillis = totalMillis();

  @Override
  public boolean getAsBoolean() {
    long total = totalMillis();
    boolean compiled = total != lastTotalMillis;
    lastTotalMillis = total;
    return compiled;
  }

  private static long totalMillis() {
    return SUPPORTED ? JIT.getTotalCompilationTime() : 0;
  }
}
