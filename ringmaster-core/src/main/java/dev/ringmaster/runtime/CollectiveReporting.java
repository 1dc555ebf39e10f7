package dev.ringmaster.runtime;

import java.util.Map;

/** A parallel model that can say which collectives one step issued (for the benchmark's report). */
public interface CollectiveReporting {
  /**
   * Runs {@code step} and returns the collectives rank 0 issued during it, as "OP bytes" keys in
   * issue order with their counts (for example {@code ALL_REDUCE 8192 B -> 48}).
   */
  Map<String, Long> collectivesDuring(Runnable step);
}
