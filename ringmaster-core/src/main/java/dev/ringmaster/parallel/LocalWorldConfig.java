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
 * @param spinIterations busy-wait iterations before a waiting rank parks; spinning only pays when
 *     every rank has a core of its own
 */
public record LocalWorldConfig(
    int worldSize,
    AllReduceAlgorithm algorithm,
    AllReduceTable table,
    int chunkElements,
    int ringSlots,
    Duration timeout,
    int spinIterations) {

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
  }

  /**
   * Defaults for a world size and algorithm: default table, chunk and timeout; spinning only when
   * the machine has more cores than ranks.
   */
  public static LocalWorldConfig of(int worldSize, AllReduceAlgorithm algorithm) {
    int spins = Runtime.getRuntime().availableProcessors() > worldSize ? 2000 : 0;
    return new LocalWorldConfig(
        worldSize,
        algorithm,
        AllReduceTable.defaults(),
        DEFAULT_CHUNK_ELEMENTS,
        DEFAULT_RING_SLOTS,
        DEFAULT_TIMEOUT,
        spins);
  }

  /** This config with another AUTO table. */
  public LocalWorldConfig withTable(AllReduceTable t) {
    return new LocalWorldConfig(
        worldSize, algorithm, t, chunkElements, ringSlots, timeout, spinIterations);
  }

  /** This config with another ring chunk size. */
  public LocalWorldConfig withChunkElements(int c) {
    return new LocalWorldConfig(worldSize, algorithm, table, c, ringSlots, timeout, spinIterations);
  }

  /** This config with another ring FIFO depth. */
  public LocalWorldConfig withRingSlots(int s) {
    return new LocalWorldConfig(
        worldSize, algorithm, table, chunkElements, s, timeout, spinIterations);
  }

  /** This config with another peer timeout. */
  public LocalWorldConfig withTimeout(Duration t) {
    return new LocalWorldConfig(
        worldSize, algorithm, table, chunkElements, ringSlots, t, spinIterations);
  }

  /** This config with another spin count. */
  public LocalWorldConfig withSpinIterations(int s) {
    return new LocalWorldConfig(worldSize, algorithm, table, chunkElements, ringSlots, timeout, s);
  }
}
