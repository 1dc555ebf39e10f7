package dev.ringmaster.cuda;

import dev.ringmaster.cuda.driver.CudaDriver;
import dev.ringmaster.cuda.driver.CudaException;
import dev.ringmaster.cuda.driver.DeviceInfo;
import dev.ringmaster.cuda.kernels.KernelImage;
import java.util.ArrayList;
import java.util.List;

/** Entry point of the CUDA backend: checks what is there before anything tries to use it. */
public final class CudaRuntime {
  private CudaRuntime() {}

  /**
   * Looks for the driver, a GPU and the built kernels without creating a context. Never throws: a
   * missing piece comes back as {@link CudaProbe#reason()} saying what to install, so {@code
   * --device cuda} can fail at once with that message.
   */
  public static CudaProbe probe() {
    String nvcc = KernelImage.nvccVersion();
    CudaDriver d;
    try {
      d = CudaDriver.get();
    } catch (CudaException | UnsatisfiedLinkError e) {
      return new CudaProbe(false, e.getMessage(), 0, List.of(), nvcc);
    }
    int version = 0;
    try {
      version = d.driverVersion();
      d.init();
      int count = d.deviceCount();
      if (count == 0) {
        return new CudaProbe(
            false,
            "the NVIDIA driver reports no CUDA GPU on this machine",
            version,
            List.of(),
            nvcc);
      }
      List<DeviceInfo> devices = new ArrayList<>();
      for (int i = 0; i < count; i++) {
        devices.add(DeviceInfo.query(d, i));
      }
      if (!KernelImage.isBuilt()) {
        return new CudaProbe(false, KernelImage.missingReason(), version, devices, nvcc);
      }
      return new CudaProbe(true, "", version, List.copyOf(devices), nvcc);
    } catch (CudaException e) {
      return new CudaProbe(
          false,
          "the NVIDIA driver is installed but CUDA cannot start (" + e.getMessage() + ")",
          version,
          List.of(),
          nvcc);
    }
  }
}
