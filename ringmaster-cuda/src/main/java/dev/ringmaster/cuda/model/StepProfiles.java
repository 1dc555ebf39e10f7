package dev.ringmaster.cuda.model;

import dev.ringmaster.cuda.driver.CudaEvent;
import dev.ringmaster.cuda.driver.CudaStream;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The per-op-group profiles of {@code bench one-batch --profile}: each step shape is profiled once
 * between two {@link #take}s, on the GPU thread, and handed out to the benchmark (any thread) by
 * {@link #take}.
 */
final class StepProfiles {
  private final Set<String> profiledSteps = new HashSet<>();
  private final Map<String, Map<String, Double>> profiles =
      Collections.synchronizedMap(new LinkedHashMap<>());

  /** Whether a step (by its profile name) is profiled for the first time; notes it. */
  boolean first(String what) {
    synchronized (profiles) {
      return profiledSteps.add(what);
    }
  }

  /** Records the profile of step {@code what}. */
  void put(String what, Map<String, Double> groups) {
    profiles.put(what, groups);
  }

  /**
   * The profiles recorded since the last call, in the order they were taken; every step shape is
   * profiled again at its next occurrence (a benchmark takes after its warm-up, whose steps may
   * have other contexts than the timed ones).
   */
  Map<String, Map<String, Double>> take() {
    synchronized (profiles) {
      Map<String, Map<String, Double>> out = new LinkedHashMap<>(profiles);
      profiles.clear();
      profiledSteps.clear();
      return out;
    }
  }

  /**
   * Prints where an eager decode-shaped step of {@code bs} rows (a decode step or a verify pass,
   * named {@code what}) spends its GPU time, and the step's time as it runs for real ({@code
   * asRun}: the graph replay when captured, else the eager step). Both runs write the same cache
   * entries.
   */
  void profileDecode(
      String what,
      GpuModelOps stack,
      CudaStream stream,
      int bs,
      int splits,
      int fusedTokens,
      boolean replayed,
      Runnable asRun) {
    stack.beginProfile();
    stack.decodeStep(bs, splits, fusedTokens);
    Map<String, Double> groups = stack.endProfile();
    put(what, groups);
    String line = StepProfiler.format(what, groups);
    try (CudaEvent start = CudaEvent.create();
        CudaEvent end = CudaEvent.create()) {
      start.record(stream);
      asRun.run();
      end.record(stream);
      end.synchronize();
      String same = replayed ? "as a graph replay" : "eager, unprofiled";
      put(what + " (same step " + same + ")", Map.of("total", (double) end.millisSince(start)));
      System.err.printf(
          Locale.ROOT, "%s%n  same step %s: %.3f ms%n", line, same, end.millisSince(start));
    }
  }
}
