package dev.ringmaster.parallel;

import java.time.Duration;
import java.util.Objects;

/**
 * Settings of an in-process world.
 *
 * @param worldSize number of ranks, at least 1
 * @param algorithm allreduce algorithm of every rank ({@code AUTO}: chosen by size from {@code
 *     table})
 * @param table thresholds for {@code AUTO}
 * @param chunkElements floats per ring pipeline chunk (the unit a rank hands its right neighbour)
 * @param ringSlots chunks each rank's ring FIFO holds, at least 2 (how far a rank may run ahead of
 *     its right neighbour)
 * @param timeout how long a rank waits for a peer before failing the collective
 * @param spinIterations busy-wait iterations before a waiting rank yields or parks; spinning only
 *     pays when every rank has a core of its own
 * @param yieldNanos after spinning, how long a waiting rank keeps yielding its core (so that a peer
 *     sharing it runs) before it parks; pays when ranks outnumber cores, where a parked peer's
 *     wake-up costs more than the wait itself
 */
public record LocalWorldConfig(
    int worldSize,
    AllReduceAlgorithm algorithm,
    AllReduceTable table,
    int chunkElements,
    int ringSlots,
    Duration timeout,
    int spinIterations,
    long yieldNanos) {

  /** Default ring chunk: 16 Ki floats (64 KiB). */
  public static final int DEFAULT_CHUNK_ELEMENTS = 16 << 10;

  /** Default ring FIFO depth. */
  public static final int DEFAULT_RING_SLOTS = 4;

  /** Default wait for a peer before giving up. */
  public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(60);

  /** Validates the settings. */
  public LocalWorldConfig {
    if (worldSize < 1) {
      throw new IllegalArgumentException("world size must be positive: " + worldSize);
    }
    Objects.requireNonNull(algorithm, "algorithm");
    Objects.requireNonNull(table, "table");
    Objects.requireNonNull(timeout, "timeout");
    if (chunkElements < 1) {
      throw new IllegalArgumentException("chunkElements must be positive: " + chunkElements);
    }
    if (ringSlots < 2) {
      throw new IllegalArgumentException("ringSlots must be at least 2: " + ringSlots);
    }
    if (timeout.isNegative() || timeout.isZero()) {
      throw new IllegalArgumentException("timeout must be positive: " + timeout);
    }
    if (spinIterations < 0) {
      throw new IllegalArgumentException("spinIterations must be >= 0: " + spinIterations);
    }
    if (yieldNanos < 0) {
      throw new IllegalArgumentException("yieldNanos must be >= 0: " + yieldNanos);
    }
  }

  /** Spin iterations of a rank with a core of its own (~50-100 us on a current x86 core). */
  public static final int DEFAULT_SPIN_ITERATIONS = 2000;

  /** How long a rank that shares its core with peers yields before it parks. */
  public static final long DEFAULT_YIELD_NANOS = 20_000;

  /**
   * Defaults for a world size and algorithm: default table, chunk and timeout; a waiting rank
   * spins, then parks, where every rank has a core, and yields, then parks, where ranks outnumber
   * cores. Parking alone costs a wake-up (tens of microseconds, more in a VM) at every hand-off,
   * and whether a hand-off catches the peer awake varies from call to call.
   */
  public static LocalWorldConfig of(int worldSize, AllReduceAlgorithm algorithm) {
    boolean coreEach = Runtime.getRuntime().availableProcessors() >= worldSize;
    return new LocalWorldConfig(
        worldSize,
        algorithm,
        AllReduceTable.defaults(),
        DEFAULT_CHUNK_ELEMENTS,
        DEFAULT_RING_SLOTS,
        DEFAULT_TIMEOUT,
        coreEach ? DEFAULT_SPIN_ITERATIONS : 0,
        coreEach ? 0 : DEFAULT_YIELD_NANOS);
  }

  /** This config with another AUTO table. */
  public LocalWorldConfig withTable(AllReduceTable t) {
    return new LocalWorldConfig(
        worldSize, algorithm, t, chunkElements, ringSlots, timeout, spinIterations, yieldNanos);
  }

  /** This config with another ring chunk size. */
  public LocalWorldConfig withChunkElements(int c) {
    return new LocalWorldConfig(
        worldSize, algorithm, table, c, ringSlots, timeout, spinIterations, yieldNanos);
  }

  /** This config with another ring FIFO depth. */
  public LocalWorldConfig withRingSlots(int s) {
    return new LocalWorldConfig(
        worldSize, algorithm, table, chunkElements, s, timeout, spinIterations, yieldNanos);
  }

  /** This config with another peer timeout. */
  public LocalWorldConfig withTimeout(Duration t) {
    return new LocalWorldConfig(
        worldSize, algorithm, table, chunkElements, ringSlots, t, spinIterations, yieldNanos);
  }

  /** This config with another spin count. */
  public LocalWorldConfig withSpinIterations(int s) {
    return new LocalWorldConfig(
        worldSize, algorithm, table, chunkElements, ringSlots, timeout, s, yieldNanos);
  }

  /** This config with another yield time. */
  public LocalWorldConfig withYieldNanos(long y) {
    return new LocalWorldConfig(
        worldSize, algorithm, table, chunkElements, ringSlots, timeout, spinIterations, y);
  }
}
