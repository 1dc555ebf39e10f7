package dev.ringmaster.sim.hw;

/**
 * Time of one in-process allreduce algorithm against message size: a fixed cost, then the message
 * bytes at a rate per cache regime. Up to {@code kneeBytes} the ranks' buffers stay in their own
 * cores' caches ({@code cachedBandwidth}); past the last knee they stream from memory ({@code
 * memoryBandwidth}); with a second knee, the bytes between the two move at {@code middleBandwidth}
 * (the shared last-level cache). A knee of 0 bytes with equal bandwidths is a single
 * latency-bandwidth line.
 *
 * @param baseUs fixed cost (hand-offs between the rank threads), microseconds
 * @param cachedBandwidth message bytes per second up to the first knee
 * @param kneeBytes message size where the working set leaves the cores' own caches (0: no knee)
 * @param memoryBandwidth message bytes per second beyond the last knee
 * @param secondKneeBytes message size where it leaves the shared cache; 0 (or not above {@code
 *     kneeBytes}) for a single knee
 * @param middleBandwidth message bytes per second between the two knees (unused without a second)
 */
public record HostLine(
    double baseUs,
    double cachedBandwidth,
    double kneeBytes,
    double memoryBandwidth,
    double secondKneeBytes,
    double middleBandwidth) {

  /** A line with at most one knee. */
  public HostLine(double baseUs, double cachedBandwidth, double kneeBytes, double memoryBandwidth) {
    this(baseUs, cachedBandwidth, kneeBytes, memoryBandwidth, 0, 0);
  }

  /** Whether the line has a second knee. */
  public boolean twoKnees() {
    return secondKneeBytes > kneeBytes && middleBandwidth > 0;
  }

  /** Microseconds for a message of {@code bytes} per rank. */
  public double timeUs(double bytes) {
    double outer = twoKnees() ? secondKneeBytes : kneeBytes;
    double cached = Math.min(bytes, kneeBytes);
    double middle = Math.max(0, Math.min(bytes, outer) - kneeBytes);
    double beyond = Math.max(0, bytes - outer);
    double seconds = cached / cachedBandwidth + beyond / memoryBandwidth;
    if (middle > 0) {
      seconds += middle / middleBandwidth;
    }
    return baseUs + seconds * 1e6;
  }
}
