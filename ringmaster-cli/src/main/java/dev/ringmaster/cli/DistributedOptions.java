package dev.ringmaster.cli;

import dev.ringmaster.cuda.nccl.DistInit;
import dev.ringmaster.parallel.AllReduceAlgorithm;
import java.util.Locale;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * How GPU ranks meet and reduce, with SGLang's flag names: the node flags ({@link NodeOptions}),
 * {@code --disable-custom-all-reduce}, and {@code --allreduce} for the algorithm.
 */
final class DistributedOptions {
  @Mixin NodeOptions nodes = new NodeOptions();

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

  /** The node layout for the GPU's NCCL bootstrap. */
  DistInit distInit() {
    return nodes.distInit();
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
