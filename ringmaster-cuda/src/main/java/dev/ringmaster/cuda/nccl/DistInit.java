package dev.ringmaster.cuda.nccl;

import dev.ringmaster.model.multinode.NodeLayout;

/**
 * Where the nodes of a multi-node world meet, as SGLang's {@code --nnodes}, {@code --node-rank} and
 * {@code --dist-init-addr HOST:PORT}: node 0 listens on the address, the others connect to it.
 *
 * @param nnodes number of nodes (JVMs), at least 1
 * @param nodeRank this node, 0 to nnodes-1
 * @param host node 0's host name or address
 * @param port node 0's TCP port
 */
public record DistInit(int nnodes, int nodeRank, String host, int port) {

  /** Validates the fields. */
  public DistInit {
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
  }

  /** A single-node world (no exchange needed). */
  public static DistInit singleNode() {
    return new DistInit(1, 0, "127.0.0.1", 0);
  }

  /** Parses {@code HOST:PORT} (IPv6 as {@code [addr]:port}) with the node counts. */
  public static DistInit parse(int nnodes, int nodeRank, String hostPort) {
    if (hostPort == null || hostPort.isBlank()) {
      if (nnodes > 1) {
        throw new IllegalArgumentException(
            "--dist-init-addr HOST:PORT is required with --nnodes > 1");
      }
      return new DistInit(nnodes, nodeRank, "127.0.0.1", 0);
    }
    NodeLayout.Address a = NodeLayout.Address.parse(hostPort);
    return new DistInit(nnodes, nodeRank, a.host(), a.port());
  }
}
