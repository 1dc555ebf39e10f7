package dev.ringmaster.parallel;

/**
 * One rank's view of a group of ranks, with collectives over float arrays in host memory.
 *
 * <p>Every rank calls each collective in the same order with matching sizes (lengths equal across
 * ranks where the method says so). Reductions are sums, computed in an order fixed by the algorithm
 * and the world size, never by timing: all ranks receive bit-identical results, and a repeated call
 * on the same inputs gives the same bits. Different algorithms may differ in the last bits. Arrays
 * passed in are only touched during the call.
 */
public interface ProcessGroup extends Communicator {

  /**
   * Sums {@code buf[off, off+len)} over all ranks, in place, with {@link #allReduceAlgorithm()}.
   * {@code len} must be equal on all ranks.
   */
  void allReduce(float[] buf, int off, int len);

  /** Sums all of {@code buf} over all ranks, in place. */
  default void allReduce(float[] buf) {
    allReduce(buf, 0, buf.length);
  }

  /**
   * Sums {@code buf[off, off+len)} over all ranks, in place, with the given algorithm ({@code AUTO}
   * selects by size). All ranks must pass the same algorithm.
   */
  void allReduce(float[] buf, int off, int len, AllReduceAlgorithm algorithm);

  /**
   * Gathers {@code len} floats from every rank: {@code recv[r*len, (r+1)*len)} receives rank r's
   * {@code send[sendOff, sendOff+len)}. {@code len} must be equal on all ranks. The send range may
   * lie inside {@code recv} (in-place gather).
   */
  void allGather(float[] send, int sendOff, int len, float[] recv);

  /**
   * Sums {@code send} over all ranks and scatters the sum: {@code send} holds {@code
   * counts[0]+...+counts[n-1]} floats laid out by rank, and this rank receives its part, {@code
   * counts[rank()]} floats, at {@code recv[0]}. {@code counts} must be equal on all ranks; {@link
   * Splits#even} gives the usual near-even split.
   */
  void reduceScatter(float[] send, float[] recv, int[] counts);

  /**
   * Exchanges variable-sized blocks between all pairs of ranks (MoE dispatch and combine): {@code
   * send} holds {@code sendCounts[d]} floats for each destination d, in rank order; {@code recv}
   * receives {@code recvCounts[s]} floats from each source s, in rank order. Counts may be zero.
   * {@code recvCounts[s]} must equal rank s's {@code sendCounts[rank()]}; {@link #exchangeCounts}
   * computes it.
   */
  void allToAll(float[] send, int[] sendCounts, float[] recv, int[] recvCounts);

  /**
   * The all-to-all of counts that precedes an uneven {@link #allToAll}: fills {@code recvCounts[s]}
   * with rank s's {@code sendCounts[rank()]}.
   */
  void exchangeCounts(int[] sendCounts, int[] recvCounts);

  /** As {@link #exchangeCounts(int[], int[])}, returning a new array. */
  default int[] exchangeCounts(int[] sendCounts) {
    int[] recvCounts = new int[worldSize()];
    exchangeCounts(sendCounts, recvCounts);
    return recvCounts;
  }

  /**
   * Copies {@code buf[off, off+len)} from rank {@code root} to the same range on every other rank.
   * {@code len} and {@code root} must be equal on all ranks.
   */
  void broadcast(float[] buf, int off, int len, int root);
}
