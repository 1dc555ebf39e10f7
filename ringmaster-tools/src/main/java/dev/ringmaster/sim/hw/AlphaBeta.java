package dev.ringmaster.sim.hw;

/**
 * Latency-bandwidth model of one collective algorithm and protocol, in NCCL's form: {@code time =
 * baseUs + hopUs * steps + busBytes / busBandwidth}, where steps is the algorithm's number of
 * sequential hops ({@code 2(n-1)} for a ring allreduce, {@code 2 log2 n} for a tree) and busBytes
 * is the message size times the algorithm's bus factor ({@code 2(n-1)/n} for allreduce).
 *
 * @param baseUs fixed latency, microseconds
 * @param hopUs latency per sequential hop, microseconds
 * @param busBandwidth achieved bus bandwidth, bytes/s
 */
public record AlphaBeta(double baseUs, double hopUs, double busBandwidth) {

  /** Time in microseconds for {@code busBytes} over {@code steps} hops. */
  public double timeUs(int steps, double busBytes) {
    return baseUs + hopUs * steps + busBytes / busBandwidth * 1e6;
  }
}
