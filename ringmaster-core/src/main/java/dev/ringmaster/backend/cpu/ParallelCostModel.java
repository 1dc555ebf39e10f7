package dev.ringmaster.backend.cpu;

import java.util.function.BooleanSupplier;

/**
 * Decides whether a product is worth a parallel region, from two costs measured on this machine and
 * kept up to date: how long a unit of matmul work takes on one thread (a moving average of the
 * products run serially) and what a region costs beyond its work (waking the workers and waiting
 * for the last: timed when the pool starts, then a moving average of what the parallel products
 * took beyond their share of work). A product goes parallel when splitting it saves more time than
 * a region costs: {@code rate * cost * (1 - 1/threads) > regionNanos}. On a busy machine regions
 * get slower (a worker waits for a core) and fewer products go parallel. Until a first product has
 * been timed, and for one product in {@link #EXPLORE_EVERY} that would go parallel, products run
 * serially, so the rate keeps being measured.
 *
 * <p>The region estimate must not get stuck high: one parallel timing counts for at most {@link
 * #MAX_SAMPLE_RATIO} times the current estimate (a product timed while the JIT compiles it, or
 * while a worker waits for a core, can take milliseconds), and one product in {@link
 * #EXPLORE_EVERY} that does not pay at the current estimate but would at the region cost timed at
 * the start runs parallel, so that the estimate comes back down once regions are cheap again.
 * Without both, the first slow regions of a process could keep every product serial for good. A
 * timing above {@link #OUTLIER_RATIO} times the estimate is dropped where the JIT compiled code
 * meanwhile ({@link JitActivity}): while the kernels compile, on two cores, runs of such timings
 * raised the estimate past a millisecond, and the products of 128-token prefills (90-400 us saved
 * each) ran serially for the first hundreds of steps. Slow regions of a busy machine still count.
 *
 * <p>Plans only decide where rows are computed, never how: results are the same either way, so the
 * racy updates of the averages (several callers may time products at once) cannot change outputs.
 */
final class ParallelCostModel {
  /** Weight of a new timing in a moving average: about the last 20 timings count. */
  private static final double NEW_SAMPLE_WEIGHT = 0.05;

  /**
   * One product in this many that would go parallel runs serially to time the rate, and one in this
   * many that would pay only at the starting region cost runs parallel to time the region.
   */
  static final int EXPLORE_EVERY = 64;

  /** A parallel timing counts for at most this many times the current region estimate. */
  static final double MAX_SAMPLE_RATIO = 4;

  /**
   * A parallel timing over this many times the region estimate is checked against the JIT's
   * activity.
   */
  static final double OUTLIER_RATIO = 2;

  private final int threads;
  private final BooleanSupplier jitCompiled;
  private final double startRegionNanos;
  private volatile double nanosPerCost = Double.NaN;
  private volatile double regionNanos;
  private int decisions;
  private int retries;

  /**
   * A model for {@code threads} threads whose parallel region was measured at {@code regionNanos}.
   *
   * @param threads threads of a region, the caller included
   * @param regionNanos the measured cost of an empty region, in nanoseconds
   */
  ParallelCostModel(int threads, double regionNanos) {
    this(threads, regionNanos, new JitActivity());
  }

  /**
   * As above, with {@code jitCompiled} saying whether the JIT has compiled code since it was last
   * asked.
   */
  ParallelCostModel(int threads, double regionNanos, BooleanSupplier jitCompiled) {
    if (threads < 1 || !(regionNanos >= 0)) {
      throw new IllegalArgumentException(
          "threads must be at least 1 and the region cost non-negative, got "
              + threads
              + " and "
              + regionNanos);
    }
    this.threads = threads;
    this.regionNanos = regionNanos;
    this.startRegionNanos = regionNanos;
    this.jitCompiled = jitCompiled;
  }

  /** Whether a product of {@code cost} units is worth a parallel region, as the costs stand. */
  boolean pays(double cost) {
    return paysAt(cost, regionNanos);
  }

  private boolean paysAt(double cost, double region) {
    double rate = nanosPerCost;
    return threads > 1 && !Double.isNaN(rate) && rate * cost * (1 - 1.0 / threads) > region;
  }

  /**
   * Whether the next product of {@code cost} units should run parallel: where it {@link #pays}, but
   * for one in {@link #EXPLORE_EVERY}; where it would pay only at the starting region cost, one in
   * {@link #EXPLORE_EVERY}.
   */
  boolean parallel(double cost) {
    if (pays(cost)) {
      return ++decisions % EXPLORE_EVERY != 0;
    }
    return paysAt(cost, startRegionNanos) && ++retries % EXPLORE_EVERY == 0;
  }

  /**
   * Learns from a product of {@code cost} units that took {@code nanos}, on the pool's threads
   * ({@code parallel}) or on the caller alone.
   */
  void observe(double cost, long nanos, boolean parallel) {
    if (cost <= 0) {
      return;
    }
    double rate = nanosPerCost;
    if (!parallel) {
      double sample = nanos / cost;
      nanosPerCost = Double.isNaN(rate) ? sample : rate + NEW_SAMPLE_WEIGHT * (sample - rate);
    } else if (!Double.isNaN(rate)) {
      double region = regionNanos;
      double overhead = Math.max(0, nanos - rate * cost / threads);
      if (overhead > OUTLIER_RATIO * Math.max(region, startRegionNanos)
          && jitCompiled.getAsBoolean()) {
        return;
      }
      overhead = Math.min(overhead, MAX_SAMPLE_RATIO * Math.max(region, startRegionNanos));
      regionNanos = region + NEW_SAMPLE_WEIGHT * (overhead - region);
    }
  }

  /** The learned nanoseconds per unit of cost on one thread; NaN before the first product. */
  double nanosPerCost() {
    return nanosPerCost;
  }

  /** The current estimate of what one parallel region costs, in nanoseconds. */
  double regionNanos() {
    return regionNanos;
  }
}
