package dev.ringmaster.sim.hw;

import java.util.List;

/**
 * A machine the simulator can predict: its GPUs, how they are linked and how collectives behave.
 * Stored as JSON (snake_case fields) under {@code profiles/} with the sources of every number.
 *
 * @param name profile name, e.g. {@code rtx-pro-6000-x8}
 * @param description one line
 * @param sources where the numbers come from (datasheets, measurements)
 * @param assumptions numbers that are estimates, to be replaced by calibration
 * @param gpuCount GPUs in the box
 * @param gpu the GPU model
 * @param interconnect how GPUs are linked
 * @param collectives collective constants
 */
public record HardwareProfile(
    String name,
    String description,
    List<String> sources,
    List<String> assumptions,
    int gpuCount,
    GpuSpec gpu,
    Interconnect interconnect,
    CollectiveSpec collectives) {

  /** Validates that the profile describes a box: a name, GPUs, their spec and their links. */
  public HardwareProfile {
    String who = name == null ? "hardware profile" : "hardware profile " + name;
    if (name == null || name.isBlank()) {
      throw new IllegalArgumentException("hardware profile needs a \"name\"");
    }
    if (gpuCount < 1) {
      throw new IllegalArgumentException(who + " needs \"gpu_count\" of at least 1");
    }
    if (gpu == null || interconnect == null || collectives == null) {
      throw new IllegalArgumentException(
          who + " needs \"gpu\", \"interconnect\" and \"collectives\" sections");
    }
  }

  /** Copy with a new name, GPU constants and collective constants (calibration output). */
  public HardwareProfile calibrated(
      String newName, List<String> newSources, GpuSpec newGpu, CollectiveSpec newCollectives) {
    return new HardwareProfile(
        newName,
        description,
        newSources,
        assumptions,
        gpuCount,
        newGpu,
        interconnect,
        newCollectives);
  }
}
