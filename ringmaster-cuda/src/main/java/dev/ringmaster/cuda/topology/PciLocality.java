package dev.ringmaster.cuda.topology;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

/**
 * Where a GPU's PCIe slot sits relative to the CPUs, from Linux's sysfs ({@code
 * /sys/bus/pci/devices/BUSID/numa_node} and {@code local_cpulist}): the NUMA node and the CPUs
 * whose memory is closest, which is where the thread driving the GPU should run.
 */
public final class PciLocality {
  private static final Path DEVICES = Path.of("/sys/bus/pci/devices");

  private PciLocality() {}

  /** The NUMA node of the device at {@code busId}, -1 when unknown. */
  public static int numaNode(String busId) {
    String s = read(busId, "numa_node");
    try {
      return s.isEmpty() ? -1 : Integer.parseInt(s);
    } catch (NumberFormatException e) {
      return -1;
    }
  }

  /** The CPU list close to the device at {@code busId} (e.g. {@code 0-47}), "" when unknown. */
  public static String localCpus(String busId) {
    return read(busId, "local_cpulist");
  }

  private static String read(String busId, String file) {
    Path p =
        DEVICES.resolve(GpuTopology.normalizeBusId(busId).toLowerCase(Locale.ROOT)).resolve(file);
    try {
      return Files.readString(p).strip();
    } catch (IOException | RuntimeException e) {
      return "";
    }
  }
}
