package dev.ringmaster.parallel;

/**
 * One rank of a {@link LocalWorld}. Staged collectives (everything except the ring allreduce and
 * the barrier) follow {@link RankSync}'s discipline: fill this rank's staging buffer, raise
 * progress, wait for the peers, read their staging. After warm-up (staging grown to the largest
 * size used) calls allocate nothing.
 */
final class LocalProcessGroup extends CheckedProcessGroup {
  private final RankSync sync;
  private final LocalAllReduce allReduce;
  private final LocalWorldConfig config;

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
  protected void begin(CollectiveOp op) {
    sync.begin(op);
  }

  @Override
  protected AllReduceTable autoTable() {
    return config.table();
  }

  @Override
  protected void reduce(AllReduceAlgorithm algorithm, float[] buf, int off, int len) {
    allReduce.run(algorithm, buf, off, len);
  }

  @Override
  protected void gather(float[] send, int sendOff, int len, float[] recv) {
    int n = worldSize();
    int r = rank();
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
  protected void scatterSums(float[] send, float[] recv, int[] counts, int total) {
    int r = rank();
    int parity = sync.beginStaged();
    long base = sync.progress();
    System.arraycopy(send, 0, sync.stage(parity, total), 0, total);
    sync.signal(base + 1);
    sync.awaitAll(base + 1);
    Reduce.ranksInOrder(sync.peers, parity, Splits.prefix(counts, r), recv, 0, counts[r]);
  }

  @Override
  protected void exchange(float[] send, int[] sendCounts, float[] recv, int[] recvCounts) {
    int n = worldSize();
    int sendTotal = Splits.sum(sendCounts);
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
      throw sync.fail(countMismatch(source, sent, expected));
    }
  }

  @Override
  protected void exchangeCountsWithPeers(int[] sendCounts, int[] recvCounts) {
    int n = worldSize();
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
  protected void broadcastFrom(float[] buf, int off, int len, int root) {
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
  protected void meet() {
    long base = sync.progress();
    sync.signal(base + 1);
    sync.awaitAll(base + 1);
  }
}
