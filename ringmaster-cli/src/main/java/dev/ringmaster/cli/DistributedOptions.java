package dev.ringmaster.cli;

import dev.ringmaster.cuda.nccl.DistInit;
import dev.ringmaster.parallel.AllReduceAlgorithm;
import java.util.Locale;
import picocli.CommandLine.Option;

/**
 * How GPU ranks meet and reduce, with SGLang's flag names: {@code --nnodes}, {@code --node-rank},
 * {@code --dist-init-addr} (node 0 listens there, the others connect), {@code
 * --disable-custom-all-reduce}, and {@code --allreduce} for the algorithm.
 */
final class DistributedOptions {
  @Option(names = "--nnodes", defaultValue = "1", description = "Nodes (one JVM each).")
  int nnodes;

  @Option(names = "--node-rank", defaultValue = "0", description = "This node, 0 to nnodes-1.")
  int nodeRank;

  @Option(
      names = "--dist-init-addr",
      description =
          "HOST:PORT where node 0 listens and the other nodes connect (needed with --nnodes > 1).")
  String distInitAddr;

  @Option(
      names = "--dist-timeout",
      defaultValue = "300",
      description = "Seconds to wait for the other nodes (default: ${DEFAULT-VALUE}).")
  int distTimeoutSeconds;

  @Option(
      names = "--allreduce",
      defaultValue = "auto",
      description =
          "auto (per message size, from a table measured on this host and cached), nccl, ring (NCCL),"
              + " oneshot, twoshot or fused (peer-memory kernels) (default: ${DEFAULT-VALUE}).")
  String allreduce;

  @Option(
      names = "--disable-custom-all-reduce",
      description = "Use NCCL for every allreduce (no peer-memory kernels).")
  boolean disableCustomAllReduce;

  /** The node layout; a usage error explains a bad combination. */
  DistInit distInit() {
    try {
      return DistInit.parse(nnodes, nodeRank, distInitAddr);
    } catch (IllegalArgumentException e) {
      throw new UserError(e.getMessage());
    }
  }

  /** The allreduce algorithm named by {@code --allreduce}. */
  AllReduceAlgorithm algorithm() {
    try {
      return AllReduceAlgorithm.valueOf(allreduce.toUpperCase(Locale.ROOT).replace("-", "_"));
    } catch (IllegalArgumentException e) {
      throw new UserError(
          "--allreduce must be auto, nccl, ring, oneshot, twoshot or fused, got " + allreduce);
    }
  }
}
