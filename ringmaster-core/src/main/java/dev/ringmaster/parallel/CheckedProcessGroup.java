package dev.ringmaster.parallel;

import java.util.Objects;

/**
 * What every {@link ProcessGroup} does around the data movement, whatever carries it: checks the
 * arguments, records the collective in {@link #stats()}, starts it ({@link #begin}, where a
 * transport checks that the ranks agree and that the world is not aborted), and answers the trivial
 * cases (nothing to move, or one rank) itself. Subclasses move the data; each hook is called only
 * when there is something to move between two or more ranks, unless it says otherwise.
 */
public abstract class CheckedProcessGroup implements ProcessGroup {
  private final CollectiveStats stats = new CollectiveStats();

  /** Starts collective {@code op} on this rank, before any data moves. */
  protected abstract void begin(CollectiveOp op);

  /** The table {@code AUTO} picks an allreduce algorithm from, by message size. */
  protected abstract AllReduceTable autoTable();

  /** Sums {@code buf[off, off+len)} over all ranks with {@code algorithm} (never AUTO). */
  protected abstract void reduce(AllReduceAlgorithm algorithm, float[] buf, int off, int len);

  /** {@link #allGather}'s data movement. */
  protected abstract void gather(float[] send, int sendOff, int len, float[] recv);

  /** {@link #reduceScatter}'s data movement; {@code total} is the sum of {@code counts}. */
  protected abstract void scatterSums(float[] send, float[] recv, int[] counts, int total);

  /**
   * {@link #allToAll}'s data movement, called for any world size (a rank's block to itself and the
   * count checks included).
   */
  protected abstract void exchange(float[] send, int[] sendCounts, float[] recv, int[] recvCounts);

  /** {@link #exchangeCounts(int[], int[])}'s exchange. */
  protected abstract void exchangeCountsWithPeers(int[] sendCounts, int[] recvCounts);

  /** {@link #broadcast}'s data movement. */
  protected abstract void broadcastFrom(float[] buf, int off, int len, int root);

  /** {@link #barrier}'s meeting of the ranks. */
  protected abstract void meet();

  @Override
  public final CollectiveStats stats() {
    return stats;
  }

  @Override
  public final void allReduce(float[] buf, int off, int len) {
    allReduce(buf, off, len, allReduceAlgorithm());
  }

  @Override
  public final void allReduce(float[] buf, int off, int len, AllReduceAlgorithm algorithm) {
    Objects.checkFromIndexSize(off, len, buf.length);
    long bytes = 4L * len;
    AllReduceAlgorithm algo =
        algorithm == AllReduceAlgorithm.AUTO ? autoTable().select(bytes) : algorithm;
    stats.record(CollectiveOp.ALL_REDUCE, algo, bytes);
    begin(CollectiveOp.ALL_REDUCE);
    if (len == 0 || worldSize() == 1) {
      return;
    }
    reduce(algo, buf, off, len);
  }

  @Override
  public final void allGather(float[] send, int sendOff, int len, float[] recv) {
    int n = worldSize();
    Objects.checkFromIndexSize(sendOff, len, send.length);
    Objects.checkFromIndexSize(0, n * len, recv.length);
    stats.record(CollectiveOp.ALL_GATHER, null, 4L * n * len);
    begin(CollectiveOp.ALL_GATHER);
    if (len == 0) {
      return;
    }
    if (n == 1) {
      System.arraycopy(send, sendOff, recv, 0, len);
      return;
    }
    gather(send, sendOff, len, recv);
  }

  @Override
  public final void reduceScatter(float[] send, float[] recv, int[] counts) {
    checkCounts(counts);
    int total = Splits.sum(counts);
    Objects.checkFromIndexSize(0, total, send.length);
    Objects.checkFromIndexSize(0, counts[rank()], recv.length);
    stats.record(CollectiveOp.REDUCE_SCATTER, null, 4L * total);
    begin(CollectiveOp.REDUCE_SCATTER);
    if (total == 0) {
      return;
    }
    if (worldSize() == 1) {
      System.arraycopy(send, 0, recv, 0, total);
      return;
    }
    scatterSums(send, recv, counts, total);
  }

  @Override
  public final void allToAll(float[] send, int[] sendCounts, float[] recv, int[] recvCounts) {
    checkCounts(sendCounts);
    checkCounts(recvCounts);
    int sendTotal = Splits.sum(sendCounts);
    Objects.checkFromIndexSize(0, sendTotal, send.length);
    Objects.checkFromIndexSize(0, Splits.sum(recvCounts), recv.length);
    stats.record(CollectiveOp.ALL_TO_ALL, null, 4L * sendTotal);
    begin(CollectiveOp.ALL_TO_ALL);
    exchange(send, sendCounts, recv, recvCounts);
  }

  @Override
  public final void exchangeCounts(int[] sendCounts, int[] recvCounts) {
    int n = worldSize();
    checkCounts(sendCounts);
    Objects.checkFromIndexSize(0, n, recvCounts.length);
    stats.record(CollectiveOp.ALL_TO_ALL, null, 4L * n);
    begin(CollectiveOp.ALL_TO_ALL);
    if (n == 1) {
      recvCounts[0] = sendCounts[0];
      return;
    }
    exchangeCountsWithPeers(sendCounts, recvCounts);
  }

  @Override
  public final void broadcast(float[] buf, int off, int len, int root) {
    Objects.checkFromIndexSize(off, len, buf.length);
    Objects.checkIndex(root, worldSize());
    stats.record(CollectiveOp.BROADCAST, null, 4L * len);
    begin(CollectiveOp.BROADCAST);
    if (len == 0 || worldSize() == 1) {
      return;
    }
    broadcastFrom(buf, off, len, root);
  }

  @Override
  public final void barrier() {
    stats.record(CollectiveOp.BARRIER, null, 0);
    begin(CollectiveOp.BARRIER);
    if (worldSize() == 1) {
      return;
    }
    meet();
  }

  /**
   * The error when rank {@code source} sends this rank {@code sent} values of an all-to-all but
   * this rank's {@code recvCounts[source]} says {@code expected}.
   */
  protected final IllegalArgumentException countMismatch(int source, int sent, int expected) {
    return new IllegalArgumentException(
        String.format(
            "rank %d: all-to-all recvCounts[%d] = %d but rank %d sends %d",
            rank(), source, expected, source, sent));
  }

  private void checkCounts(int[] counts) {
    if (counts.length != worldSize()) {
      throw new IllegalArgumentException(
          "counts has " + counts.length + " entries for world size " + worldSize());
    }
  }
}
