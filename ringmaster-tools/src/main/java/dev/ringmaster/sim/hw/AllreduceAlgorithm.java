package dev.ringmaster.sim.hw;

/** Allreduce implementations the simulator compares ({@code --allreduce}). */
public enum AllreduceAlgorithm {
  /** NCCL choosing among its algorithms and protocols by size (its tuner). */
  NCCL("nccl"),
  /** NCCL restricted to the ring algorithm (NCCL_ALGO=Ring), best protocol. */
  RING("ring"),
  /** Peer-memory one-shot: every rank reads the whole message from every peer and reduces. */
  ONESHOT("oneshot"),
  /** Peer-memory two-shot: reduce-scatter by peer reads, then all-gather by peer reads. */
  TWOSHOT("twoshot"),
  /** Fused allreduce + residual add + RMSNorm kernel (one-shot traffic, one kernel fewer). */
  FUSED("fused");

  private final String cliName;

  AllreduceAlgorithm(String cliName) {
    this.cliName = cliName;
  }

  /** Name used on the command line. */
  public String cliName() {
    return cliName;
  }

  /** Parses a CLI name. */
  public static AllreduceAlgorithm parse(String name) {
    for (AllreduceAlgorithm a : values()) {
      if (a.cliName.equalsIgnoreCase(name)) {
        return a;
      }
    }
    throw new IllegalArgumentException(
        "unknown allreduce '" + name + "' (nccl, ring, oneshot, twoshot, fused)");
  }
}
