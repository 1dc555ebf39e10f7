package dev.ringmaster.cuda;

import dev.ringmaster.cuda.driver.DeviceInfo;
import java.util.List;

/**
 * What {@link CudaRuntime#probe()} found.
 *
 * @param available true when a GPU, the driver and the kernels are all usable
 * @param reason why not, with what to install (empty when available)
 * @param driverVersion the driver's CUDA version (e.g. 13000), or 0 when unknown
 * @param devices the GPUs the driver reports
 * @param kernelsNvcc the nvcc version the kernels were built with, or "absent"
 */
public record CudaProbe(
    boolean available,
    String reason,
    int driverVersion,
    List<DeviceInfo> devices,
    String kernelsNvcc) {

  /** One line for logs and {@code doctor}. */
  public String summary() {
    if (!available) {
      return "CUDA unavailable: " + reason;
    }
    return String.format(
        java.util.Locale.ROOT,
        "CUDA driver %d.%d, kernels from nvcc %s, %s",
        driverVersion / 1000,
        driverVersion % 1000 / 10,
        kernelsNvcc,
        devices);
  }
}
