package dev.ringmaster.cli;

import dev.ringmaster.cuda.nccl.DistInit;
import dev.ringmaster.model.multinode.NodeLayout;
import java.time.Duration;
import picocli.CommandLine.Option;

/**
 * Where the nodes of a multi-node run meet, with SGLang's flag names: {@code --nnodes}, {@code
 * --node-rank}, {@code --dist-init-addr} (node 0 listens there, the others connect), {@code
 * --dist-timeout}.
 */
final class NodeOptions {
  @Option(names = "--nnodes", defaultValue = "1", description = "Nodes (one JVM each).")
  int nnodes;

  @Option(names = "--node-rank", defaultValue = "0", description = "This node, 0 to nnodes-1.")
  int nodeRank;

  @Option(
      names = "--dist-init-addr",
      description =
          "HOST:PORT where node 0 listens and the other nodes connect (needed with --nnodes > 1;"
              + " an address the other nodes can reach).")
  String distInitAddr;

  @Option(
      names = "--dist-timeout",
      defaultValue = "300",
      description =
          "Seconds to wait for the other nodes, and for a silent peer in a collective (default:"
              + " ${DEFAULT-VALUE}).")
  int distTimeoutSeconds;

  /** The node layout; a usage error explains a bad combination. */
  NodeLayout layout() {
    if (distTimeoutSeconds < 1) {
      throw new UserError("--dist-timeout must be at least 1 second, got " + distTimeoutSeconds);
    }
    try {
      return NodeLayout.parse(
          nnodes, nodeRank, distInitAddr, Duration.ofSeconds(distTimeoutSeconds));
    } catch (IllegalArgumentException e) {
      throw new UserError(e.getMessage());
    }
  }

  /** The same layout for the GPU's NCCL bootstrap. */
  DistInit distInit() {
    NodeLayout l = layout();
    return new DistInit(l.nnodes(), l.nodeRank(), l.host(), l.port());
  }

  /** Whether the run spans more than one node. */
  boolean multiNode() {
    return layout().nnodes() > 1;
  }
}
