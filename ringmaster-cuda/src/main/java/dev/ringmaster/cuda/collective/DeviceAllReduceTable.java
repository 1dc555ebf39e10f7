package dev.ringmaster.cuda.collective;

import dev.ringmaster.parallel.AllReduceAlgorithm;
import java.util.List;

/**
 * What {@link AllReduceAlgorithm#AUTO} runs on GPUs: steps in increasing size, each the largest
 * message (inclusive) it covers and its algorithm; anything larger runs NCCL.
 *
 * @param steps the steps, sizes strictly increasing, algorithms concrete
 */
public record DeviceAllReduceTable(List<Step> steps) {

  /**
   * One step.
   *
   * @param maxBytes largest message (inclusive) of the step
   * @param algorithm NCCL, ONESHOT or TWOSHOT
   */
  public record Step(long maxBytes, AllReduceAlgorithm algorithm) {}

  /** Validates the steps. */
  public DeviceAllReduceTable {
    steps = List.copyOf(steps);
    long last = -1;
    for (Step s : steps) {
      if (s.maxBytes() <= last) {
        throw new IllegalArgumentException("table sizes must increase: " + steps);
      }
      if (s.algorithm() == AllReduceAlgorithm.AUTO) {
        throw new IllegalArgumentException("a table step cannot be AUTO");
      }
      last = s.maxBytes();
    }
  }

  /** NCCL for every size. */
  public static DeviceAllReduceTable ncclOnly() {
    return new DeviceAllReduceTable(List.of());
  }

  /** The algorithm for a message of {@code bytes}. */
  public AllReduceAlgorithm select(long bytes) {
    for (Step s : steps) {
      if (bytes <= s.maxBytes()) {
        return s.algorithm();
      }
    }
    return AllReduceAlgorithm.NCCL;
  }

  /** Whether some size runs a peer-memory kernel. */
  public boolean usesPeerMemory() {
    return steps.stream().anyMatch(s -> s.algorithm() != AllReduceAlgorithm.NCCL);
  }

  @Override
  public String toString() {
    StringBuilder sb = new StringBuilder();
    for (Step s : steps) {
      sb.append("<= ").append(s.maxBytes()).append(" B: ").append(s.algorithm()).append(", ");
    }
    return sb.append("above: NCCL").toString();
  }
}
