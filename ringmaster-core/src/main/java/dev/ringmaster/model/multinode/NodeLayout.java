package dev.ringmaster.model.multinode;

import java.time.Duration;
import java.util.Objects;

/**
 * Where the nodes of a multi-node run meet, with SGLang's flags: {@code --nnodes}, {@code
 * --node-rank}, {@code --dist-init-addr HOST:PORT} (node 0 listens there, the others connect; it
 * must be an address the other nodes can reach), and how long to wait for the others.
 *
 * @param nnodes number of nodes (JVMs), at least 1
 * @param nodeRank this node, 0 to nnodes-1
 * @param host node 0's host name or address
 * @param port node 0's TCP port for the control plane
 * @param timeout how long to wait for the other nodes to connect, and for a silent peer
 */
public record NodeLayout(int nnodes, int nodeRank, String host, int port, Duration timeout) {

  /** Validates the fields. */
  public NodeLayout {
    if (nnodes < 1) {
      throw new IllegalArgumentException("--nnodes must be at least 1, got " + nnodes);
    }
    if (nodeRank < 0 || nodeRank >= nnodes) {
      throw new IllegalArgumentException(
          "--node-rank must be in 0.." + (nnodes - 1) + ", got " + nodeRank);
    }
    if (port < 0 || port > 65535) {
      throw new IllegalArgumentException("--dist-init-addr port out of range: " + port);
    }
    Objects.requireNonNull(host, "host");
    Objects.requireNonNull(timeout, "timeout");
    if (timeout.isNegative() || timeout.isZero()) {
      throw new IllegalArgumentException("--dist-timeout must be positive, got " + timeout);
    }
  }

  /**
   * Parses {@code HOST:PORT} ({@code [v6addr]:PORT} for IPv6) with the node counts; the address is
   * required with more than one node.
   */
  public static NodeLayout parse(int nnodes, int nodeRank, String hostPort, Duration timeout) {
    if (hostPort == null || hostPort.isBlank()) {
      if (nnodes > 1) {
        throw new IllegalArgumentException(
            "--dist-init-addr HOST:PORT is required with --nnodes > 1");
      }
      return new NodeLayout(nnodes, nodeRank, "127.0.0.1", 0, timeout);
    }
    Address a = Address.parse(hostPort);
    return new NodeLayout(nnodes, nodeRank, a.host(), a.port(), timeout);
  }

  /**
   * A {@code --dist-init-addr} value.
   *
   * @param host host name or address (IPv6 without its brackets)
   * @param port TCP port
   */
  public record Address(String host, int port) {
    /** Parses {@code HOST:PORT}, {@code [v6addr]:PORT} for IPv6. */
    public static Address parse(String hostPort) {
      int colon = hostPort.lastIndexOf(':');
      if (colon <= 0 || colon == hostPort.length() - 1) {
        throw new IllegalArgumentException(
            "--dist-init-addr must be HOST:PORT, got '" + hostPort + "'");
      }
      String host = hostPort.substring(0, colon);
      if (host.startsWith("[") && host.endsWith("]")) {
        host = host.substring(1, host.length() - 1);
      }
      try {
        return new Address(host, Integer.parseInt(hostPort.substring(colon + 1)));
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException(
            "--dist-init-addr port is not a number: '" + hostPort + "'", e);
      }
    }
  }

  /** Whether this is node 0, the one that drives the others. */
  public boolean leader() {
    return nodeRank == 0;
  }

  /** {@code host:port} of node 0. */
  public String address() {
    return (host.contains(":") ? "[" + host + "]" : host) + ":" + port;
  }

  /**
   * The ranks this node holds in a world of {@code worldSize}: consecutive, {@code worldSize /
   * nnodes} of them.
   *
   * @throws IllegalArgumentException when {@code worldSize} is not a multiple of the node count
   */
  public int localRanks(int worldSize) {
    if (worldSize % nnodes != 0) {
      throw new IllegalArgumentException(
          "--tp-size "
              + worldSize
              + " is not divisible by --nnodes "
              + nnodes
              + " (every node runs tp-size / nnodes ranks)");
    }
    return worldSize / nnodes;
  }
}
