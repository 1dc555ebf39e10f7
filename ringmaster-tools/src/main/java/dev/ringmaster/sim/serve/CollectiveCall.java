package dev.ringmaster.sim.serve;

/**
 * Collectives of one kind issued in one step.
 *
 * @param where which part of the model issues it (e.g. {@code attention output})
 * @param op allreduce, allgather, all-to-all
 * @param count calls per step
 * @param bytes message bytes per call (per rank)
 * @param algorithm the algorithm/protocol the model picked
 * @param timeUsEach predicted microseconds per call
 */
public record CollectiveCall(
    String where, String op, int count, double bytes, String algorithm, double timeUsEach) {

  /** Total milliseconds per step. */
  public double totalMs() {
    return count * timeUsEach / 1000.0;
  }
}
