package dev.ringmaster.parallel;

import java.util.Objects;

/**
 * One rank of a {@link LocalWorld}. Staged collectives (everything except the ring allreduce and
 * the barrier) follow {@link RankSync}'s discipline: fill this rank's staging buffer, raise
 * progress, wait for the peers, read their staging. After warm-up (staging grown to the largest
 * size used) calls allocate nothing.
 */
final class LocalProcessGroup implements ProcessGroup {
  private final RankSync sync;
  private final LocalAllReduce allReduce;
  private final LocalWorldConfig config;
  private final CollectiveStats stats = new CollectiveStats();

  LocalProcessGroup(RankSync sync, LocalWorldConfig config) {
    this.sync = sync;
    this.config = config;
    this.allReduce = new LocalAllReduce(sync, config);
  }

  @Override
  public int rank() {
    return sync.rank;
  }

  @Override
  public int worldSize() {
    return sync.worldSize;
  }

  @Override
  public AllReduceAlgorithm allReduceAlgorithm() {
    return config.algorithm();
  }

  @Override
  public CollectiveStats stats() {
    return stats;
  }

  @Override
  public void allReduce(float[] buf, int off, int len) {
    allReduce(buf, off, len, config.algorithm());
  }

  @Override
  public void allReduce(float[] buf, int off, int len, AllReduceAlgorithm algorithm) {
    Objects.checkFromIndexSize(off, len, buf.length);
    long bytes = 4L * len;
    AllReduceAlgorithm algo =
        algorithm == AllReduceAlgorithm.AUTO ? config.table().select(bytes) : algorithm;
    stats.record(CollectiveOp.ALL_REDUCE, algo, bytes);
    sync.begin(CollectiveOp.ALL_REDUCE);
    if (len == 0 || worldSize() == 1) {
      return;
    }
    allReduce.run(algo, buf, off, len);
  }

  @Override
  public void allGather(float[] send, int sendOff, int len, float[] recv) {
    int n = worldSize();
    Objects.checkFromIndexSize(sendOff, len, send.length);
    Objects.checkFromIndexSize(0, n * len, recv.length);
    stats.record(CollectiveOp.ALL_GATHER, null, 4L * n * len);
    sync.begin(CollectiveOp.ALL_GATHER);
    if (len == 0) {
      return;
    }
    int r = rank();
    if (n == 1) {
      System.arraycopy(send, sendOff, recv, 0, len);
      return;
    }
    int parity = sync.beginStaged();
    long base = sync.progress();
    float[] stage = sync.stage(parity, len);
    System.arraycopy(send, sendOff, stage, 0, len);
    sync.signal(base + 1);
    sync.awaitAll(base + 1);
    for (int i = 0; i < n; i++) {
      int s = (r + i) % n; // own block first: send may lie inside recv
      System.arraycopy(sync.peers[s].stage[parity], 0, recv, s * len, len);
    }
  }

  @Override
  public void reduceScatter(float[] send, float[] recv, int[] counts) {
    int n = worldSize();
    checkCounts(counts);
    int total = Splits.sum(counts);
    int r = rank();
    Objects.checkFromIndexSize(0, total, send.length);
    Objects.checkFromIndexSize(0, counts[r], recv.length);
    stats.record(CollectiveOp.REDUCE_SCATTER, null, 4L * total);
    sync.begin(CollectiveOp.REDUCE_SCATTER);
    if (total == 0) {
      return;
    }
    if (n == 1) {
      System.arraycopy(send, 0, recv, 0, total);
      return;
    }
    int parity = sync.beginStaged();
    long base = sync.progress();
    System.arraycopy(send, 0, sync.stage(parity, total), 0, total);
    sync.signal(base + 1);
    sync.awaitAll(base + 1);
    Reduce.ranksInOrder(sync.peers, parity, Splits.prefix(counts, r), recv, 0, counts[r]);
  }

  @Override
  public void allToAll(float[] send, int[] sendCounts, float[] recv, int[] recvCounts) {
    int n = worldSize();
    checkCounts(sendCounts);
    checkCounts(recvCounts);
    int sendTotal = Splits.sum(sendCounts);
    Objects.checkFromIndexSize(0, sendTotal, send.length);
    Objects.checkFromIndexSize(0, Splits.sum(recvCounts), recv.length);
    stats.record(CollectiveOp.ALL_TO_ALL, null, 4L * sendTotal);
    sync.begin(CollectiveOp.ALL_TO_ALL);
    if (n == 1) {
      checkReceived(0, sendCounts[0], recvCounts[0]);
      System.arraycopy(send, 0, recv, 0, sendTotal);
      return;
    }
    int r = rank();
    int parity = sync.beginStaged();
    long base = sync.progress();
    System.arraycopy(send, 0, sync.stage(parity, sendTotal), 0, sendTotal);
    System.arraycopy(sendCounts, 0, sync.self.counts[parity], 0, n);
    sync.signal(base + 1);
    sync.awaitAll(base + 1);
    int at = 0;
    for (int s = 0; s < n; s++) {
      int[] theirCounts = sync.peers[s].counts[parity];
      int count = theirCounts[r];
      checkReceived(s, count, recvCounts[s]);
      System.arraycopy(sync.peers[s].stage[parity], Splits.prefix(theirCounts, r), recv, at, count);
      at += count;
    }
  }

  private void checkReceived(int source, int sent, int expected) {
    if (sent != expected) {
      // Peers may already be past this collective; abort so they fail instead of hanging later.
      throw sync.fail(
          new IllegalArgumentException(
              String.format(
                  "rank %d: all-to-all recvCounts[%d] = %d but rank %d sends %d",
                  rank(), source, expected, source, sent)));
    }
  }

  @Override
  public void exchangeCounts(int[] sendCounts, int[] recvCounts) {
    int n = worldSize();
    checkCounts(sendCounts);
    Objects.checkFromIndexSize(0, n, recvCounts.length);
    stats.record(CollectiveOp.ALL_TO_ALL, null, 4L * n);
    sync.begin(CollectiveOp.ALL_TO_ALL);
    if (n == 1) {
      recvCounts[0] = sendCounts[0];
      return;
    }
    int parity = sync.beginStaged();
    long base = sync.progress();
    System.arraycopy(sendCounts, 0, sync.self.counts[parity], 0, n);
    sync.signal(base + 1);
    sync.awaitAll(base + 1);
    for (int s = 0; s < n; s++) {
      recvCounts[s] = sync.peers[s].counts[parity][rank()];
    }
  }

  @Override
  public void broadcast(float[] buf, int off, int len, int root) {
    int n = worldSize();
    Objects.checkFromIndexSize(off, len, buf.length);
    Objects.checkIndex(root, n);
    stats.record(CollectiveOp.BROADCAST, null, 4L * len);
    sync.begin(CollectiveOp.BROADCAST);
    if (len == 0 || n == 1) {
      return;
    }
    int parity = sync.beginStaged();
    long base = sync.progress();
    if (rank() == root) {
      System.arraycopy(buf, off, sync.stage(parity, len), 0, len);
      sync.signal(base + 1);
    } else {
      sync.signal(base + 1);
      sync.await(root, base + 1);
      System.arraycopy(sync.peers[root].stage[parity], 0, buf, off, len);
    }
  }

  @Override
  public void barrier() {
    stats.record(CollectiveOp.BARRIER, null, 0);
    sync.begin(CollectiveOp.BARRIER);
    if (worldSize() == 1) {
      return;
    }
    long base = sync.progress();
    sync.signal(base + 1);
    sync.awaitAll(base + 1);
  }

  private void checkCounts(int[] counts) {
    if (counts.length != worldSize()) {
      throw new IllegalArgumentException(
          "counts has " + counts.length + " entries for world size " + worldSize());
    }
  }
}
