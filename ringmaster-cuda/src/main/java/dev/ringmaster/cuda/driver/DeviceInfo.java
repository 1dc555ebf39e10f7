package dev.ringmaster.cuda.driver;

/**
 * What the driver says about one GPU.
 *
 * @param ordinal device ordinal
 * @param name marketing name, e.g. "NVIDIA H200"
 * @param major compute capability major
 * @param minor compute capability minor
 * @param multiprocessors SM count
 * @param totalMemory device memory in bytes
 * @param l2CacheBytes L2 cache size in bytes
 * @param maxSharedPerBlockOptin the most shared memory one block may opt in to
 */
public record DeviceInfo(
    int ordinal,
    String name,
    int major,
    int minor,
    int multiprocessors,
    long totalMemory,
    int l2CacheBytes,
    int maxSharedPerBlockOptin) {

  /** Reads the attributes of device {@code ordinal} (needs cuInit, no context). */
  public static DeviceInfo query(CudaDriver d, int ordinal) {
    int dev = d.device(ordinal);
    return new DeviceInfo(
        ordinal,
        d.deviceName(dev),
        d.deviceAttribute(dev, 75),
        d.deviceAttribute(dev, 76),
        d.deviceAttribute(dev, 16),
        d.deviceTotalMemory(dev),
        d.deviceAttribute(dev, 38),
        d.deviceAttribute(dev, 97));
  }

  /** e.g. "NVIDIA H200, sm_90, 132 SMs, 140.4 GiB". */
  @Override
  public String toString() {
    return String.format(
        java.util.Locale.ROOT,
        "%s, sm_%d%d, %d SMs, %.1f GiB",
        name,
        major,
        minor,
        multiprocessors,
        totalMemory / (double) (1L << 30));
  }
}
