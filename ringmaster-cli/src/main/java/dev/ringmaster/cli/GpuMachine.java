package dev.ringmaster.cli;

import dev.ringmaster.cuda.nccl.Nccl;
import dev.ringmaster.cuda.topology.GpuTopology;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What a GPU benchmark record says about the machine beyond the host: the GPUs it used with their
 * links as detected, and the NCCL version, so that a figure can be told from one taken on another
 * box. Each part is left out, with the reason in its place, where it cannot be read.
 */
final class GpuMachine {
  private GpuMachine() {}

  /** Machine fields for a run on the first {@code gpus} GPUs (all visible ones when 0). */
  static Map<String, String> describe(int gpus) {
    Map<String, String> out = new LinkedHashMap<>();
    try {
      GpuTopology t = GpuTopology.probe();
      GpuTopology used = gpus > 0 && gpus <= t.gpuCount() ? t.first(gpus) : t;
      out.put("gpus", used.summary());
    } catch (RuntimeException | LinkageError e) {
      out.put("gpus", "unknown (" + e.getMessage() + ")");
    }
    if (gpus != 1) {
      try {
        out.put("nccl", Nccl.versionString(Nccl.get().version()));
      } catch (RuntimeException | LinkageError e) {
        out.put("nccl", "unavailable (" + e.getMessage() + ")");
      }
    }
    return out;
  }
}
