package dev.ringmaster.parallel.tcp;

import dev.ringmaster.parallel.AllReduceAlgorithm;
import dev.ringmaster.parallel.AllReduceTable;
import java.time.Duration;
import java.util.Objects;

/**
 * Settings of a world of ranks spread over nodes connected by TCP. Node k holds the consecutive
 * ranks {@code [k * localSize, (k+1) * localSize)}.
 *
 * @param worldSize ranks in the world, a multiple of {@code nnodes}
 * @param nnodes nodes (JVMs)
 * @param algorithm allreduce algorithm ({@code AUTO}: chosen by size from {@code table})
 * @param table thresholds for {@code AUTO}
 * @param timeout how long to wait for a connection, or for a peer's data in a collective
 */
public record TcpWorldConfig(
    int worldSize,
    int nnodes,
    AllReduceAlgorithm algorithm,
    AllReduceTable table,
    Duration timeout) {

  /** Default wait for a peer. */
  public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(300);

  /** Validates the settings. */
  public TcpWorldConfig {
    if (nnodes < 1) {
      throw new IllegalArgumentException("--nnodes must be at least 1, got " + nnodes);
    }
    if (worldSize < 1 || worldSize % nnodes != 0) {
      throw new IllegalArgumentException(
          "--tp-size " + worldSize + " is not divisible by --nnodes " + nnodes);
    }
    Objects.requireNonNull(algorithm, "algorithm");
    Objects.requireNonNull(table, "table");
    Objects.requireNonNull(timeout, "timeout");
    if (timeout.isNegative() || timeout.isZero() || timeout.toMillis() > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("timeout out of range: " + timeout);
    }
  }

  /** Defaults: the default AUTO table and timeout. */
  public static TcpWorldConfig of(int worldSize, int nnodes, AllReduceAlgorithm algorithm) {
    return new TcpWorldConfig(
        worldSize, nnodes, algorithm, AllReduceTable.defaults(), DEFAULT_TIMEOUT);
  }

  /** This config with another AUTO table. */
  public TcpWorldConfig withTable(AllReduceTable t) {
    return new TcpWorldConfig(worldSize, nnodes, algorithm, t, timeout);
  }

  /** This config with another timeout. */
  public TcpWorldConfig withTimeout(Duration t) {
    return new TcpWorldConfig(worldSize, nnodes, algorithm, table, t);
  }

  /** Ranks per node. */
  public int localSize() {
    return worldSize / nnodes;
  }

  /** The node that holds {@code rank}. */
  public int nodeOf(int rank) {
    return rank / localSize();
  }
}
