package dev.ringmaster.cuda.model;

import dev.ringmaster.parallel.CollectiveStats;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The collectives one rank issues per step, as "OP bytes B" keys with counts (the CPU engine's
 * report). A CUDA graph replay issues its collectives without calling the communicator, so what
 * each decode graph holds is recorded while it is captured and reported again at each replay; eager
 * steps report as they go.
 */
final class StepCollectives {
  private final Map<Integer, Map<String, Long>> perGraph = new ConcurrentHashMap<>();
  private volatile Map<String, Long> capturing;
  private volatile Map<String, Long> target;
  private final java.util.concurrent.atomic.AtomicLong replays =
      new java.util.concurrent.atomic.AtomicLong();

  /** Listens to {@code stats} (the rank's communicator) from now on. */
  StepCollectives(CollectiveStats stats) {
    stats.setListener(
        (op, algorithm, bytes) -> {
          String key = op + " " + bytes + " B";
          Map<String, Long> c = capturing;
          if (c != null) {
            c.merge(key, 1L, Long::sum);
          }
          Map<String, Long> t = target;
          if (t != null) {
            t.merge(key, 1L, Long::sum);
          }
        });
  }

  /** Runs {@code step} (one decode step of {@code bs} rows) and keeps what it issued. */
  void recordGraph(int bs, Runnable step) {
    Map<String, Long> seen = new LinkedHashMap<>();
    capturing = seen;
    try {
      step.run();
    } finally {
      capturing = null;
    }
    perGraph.put(bs, seen);
  }

  /** Reports the collectives of the graph of size {@code bs}, just replayed. */
  void replayed(int bs) {
    replays.incrementAndGet();
    Map<String, Long> t = target;
    Map<String, Long> seen = perGraph.get(bs);
    if (t != null && seen != null) {
      seen.forEach((k, v) -> t.merge(k, v, Long::sum));
    }
  }

  /** Decode graphs replayed so far (each replay issues the collectives captured in it). */
  long replays() {
    return replays.get();
  }

  /** Sends later steps' collectives to {@code sink} (null: nowhere). */
  void reportTo(Map<String, Long> sink) {
    target = sink;
  }
}
