package dev.ringmaster.parallel;

import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * Counts the collectives one rank issued (number and bytes per operation, allreduces per
 * algorithm), for reports such as "collectives per decode step". Recording does not allocate;
 * counters may be read and reset from any thread.
 */
public final class CollectiveStats {
  private static final CollectiveOp[] OPS = CollectiveOp.values();
  private static final AllReduceAlgorithm[] ALGORITHMS = AllReduceAlgorithm.values();

  private final AtomicLongArray counts = new AtomicLongArray(OPS.length);
  private final AtomicLongArray bytes = new AtomicLongArray(OPS.length);
  private final AtomicLongArray allReduces = new AtomicLongArray(ALGORITHMS.length);
  private volatile CollectiveListener listener;

  /** Counts one collective and tells the listener, if any. See {@link CollectiveListener}. */
  public void record(CollectiveOp op, AllReduceAlgorithm algorithm, long payloadBytes) {
    counts.getAndIncrement(op.ordinal());
    bytes.getAndAdd(op.ordinal(), payloadBytes);
    if (algorithm != null) {
      allReduces.getAndIncrement(algorithm.ordinal());
    }
    CollectiveListener l = listener;
    if (l != null) {
      l.onCollective(op, algorithm, payloadBytes);
    }
  }

  /** Sets (or, with null, removes) the listener told about every later collective. */
  public void setListener(CollectiveListener listener) {
    this.listener = listener;
  }

  /** Number of {@code op} collectives since creation or the last reset. */
  public long count(CollectiveOp op) {
    return counts.get(op.ordinal());
  }

  /** Payload bytes of {@code op} collectives since creation or the last reset. */
  public long bytes(CollectiveOp op) {
    return bytes.get(op.ordinal());
  }

  /** Number of allreduces that ran with {@code algorithm}. */
  public long allReduceCount(AllReduceAlgorithm algorithm) {
    return allReduces.get(algorithm.ordinal());
  }

  /** Number of collectives of all kinds. */
  public long totalCount() {
    long total = 0;
    for (CollectiveOp op : OPS) {
      total += count(op);
    }
    return total;
  }

  /** Zeroes all counters. */
  public void reset() {
    for (int i = 0; i < OPS.length; i++) {
      counts.set(i, 0);
      bytes.set(i, 0);
    }
    for (int i = 0; i < ALGORITHMS.length; i++) {
      allReduces.set(i, 0);
    }
  }

  /** A copy of the counters: operations with a non-zero count only. */
  public Snapshot snapshot() {
    Map<CollectiveOp, Long> c = new EnumMap<>(CollectiveOp.class);
    Map<CollectiveOp, Long> b = new EnumMap<>(CollectiveOp.class);
    Map<AllReduceAlgorithm, Long> a = new EnumMap<>(AllReduceAlgorithm.class);
    for (CollectiveOp op : OPS) {
      if (count(op) != 0) {
        c.put(op, count(op));
        b.put(op, bytes(op));
      }
    }
    for (AllReduceAlgorithm algorithm : ALGORITHMS) {
      if (allReduceCount(algorithm) != 0) {
        a.put(algorithm, allReduceCount(algorithm));
      }
    }
    return new Snapshot(Map.copyOf(c), Map.copyOf(b), Map.copyOf(a));
  }

  /**
   * Counters at one moment.
   *
   * @param counts collectives per operation
   * @param bytes payload bytes per operation
   * @param allReducesByAlgorithm allreduces per algorithm actually used
   */
  public record Snapshot(
      Map<CollectiveOp, Long> counts,
      Map<CollectiveOp, Long> bytes,
      Map<AllReduceAlgorithm, Long> allReducesByAlgorithm) {}
}
