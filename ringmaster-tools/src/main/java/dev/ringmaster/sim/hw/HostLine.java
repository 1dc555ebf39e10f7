package dev.ringmaster.sim.hw;

/**
 * Time of one in-process allreduce algorithm against message size: a fixed cost, then the bytes up
 * to {@code kneeBytes} at the bandwidth the ranks reach while their buffers stay in cache, and the
 * rest at the bandwidth they reach from memory. A knee at or beyond the largest message (or 0 bytes
 * with equal bandwidths) is a single latency-bandwidth line.
 *
 * @param baseUs fixed cost (hand-offs between the rank threads), microseconds
 * @param cachedBandwidth message bytes per second up to the knee
 * @param kneeBytes message size where the working set leaves the caches
 * @param memoryBandwidth message bytes per second beyond the knee
 */
public record HostLine(
    double baseUs, double cachedBandwidth, double kneeBytes, double memoryBandwidth) {

  /** Microseconds for a message of {@code bytes} per rank. */
  public double timeUs(double bytes) {
    double cached = Math.min(bytes, kneeBytes);
    double beyond = Math.max(0, bytes - kneeBytes);
    return baseUs + (cached / cachedBandwidth + beyond / memoryBandwidth) * 1e6;
  }
}
