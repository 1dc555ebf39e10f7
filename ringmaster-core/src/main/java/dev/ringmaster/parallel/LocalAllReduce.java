package dev.ringmaster.parallel;

/**
 * The allreduce algorithms of the in-process world, each over the flag protocol of {@link
 * RankSync}. Every element's final value is computed in one fixed order (ring: around the ring
 * starting after the segment's owner; one-shot and two-shot: rank order; recursive doubling: a
 * fixed pairing tree) and then copied, so all ranks hold the same bits.
 */
final class LocalAllReduce implements AllReduceSteps {
  private final RankSync sync;
  private final int chunk;
  private final int slots;

  LocalAllReduce(RankSync sync, LocalWorldConfig config) {
    this.sync = sync;
    this.chunk = config.chunkElements();
    this.slots = config.ringSlots();
  }

  /** Every rank copies its input to staging, then sums all ranks' staging in rank order. */
  @Override
  public void oneShot(float[] buf, int off, int len) {
    int parity = sync.beginStaged();
    long base = sync.progress();
    System.arraycopy(buf, off, sync.stage(parity, len), 0, len);
    sync.signal(base + 1);
    sync.awaitAll(base + 1);
    Reduce.ranksInOrder(sync.peers, parity, 0, buf, off, len);
  }

  /**
   * Rank r sums slice r of all ranks' staging (rank order) and publishes it in its own staging
   * (slice r of its staging is read by no one else); then every rank copies the others' slices.
   */
  @Override
  public void twoShot(float[] buf, int off, int len) {
    int n = sync.worldSize;
    int r = sync.rank;
    int parity = sync.beginStaged();
    long base = sync.progress();
    float[] stage = sync.stage(parity, len);
    System.arraycopy(buf, off, stage, 0, len);
    sync.signal(base + 1);
    sync.awaitAll(base + 1);
    int mine = Splits.evenOffset(len, n, r);
    int mineLen = Splits.evenCount(len, n, r);
    Reduce.ranksInOrder(sync.peers, parity, mine, buf, off + mine, mineLen);
    System.arraycopy(buf, off + mine, stage, mine, mineLen);
    sync.signal(base + 2);
    sync.awaitAll(base + 2);
    for (int i = 1; i < n; i++) {
      int s = (r + i) % n;
      int at = Splits.evenOffset(len, n, s);
      System.arraycopy(sync.peers[s].stage[parity], at, buf, off + at, Splits.evenCount(len, n, s));
    }
  }

  /**
   * Recursive doubling over the largest power of two P <= n: ranks at or above P first hand their
   * data to rank r-P and at the end copy its result. Region k of a rank's staging holds what it
   * publishes at step k, so nothing is overwritten while a partner may read it. Partners add
   * lower-ranked operand first; IEEE addition is commutative, so both hold the same sum.
   */
  @Override
  public void recursiveDoubling(float[] buf, int off, int len) {
    int n = sync.worldSize;
    int r = sync.rank;
    int pow2 = Integer.highestOneBit(n);
    int steps = Integer.numberOfTrailingZeros(pow2);
    int extras = n - pow2;
    int parity = sync.beginStaged();
    long base = sync.progress();
    long done = base + 2 + steps;
    float[] stage = sync.stage(parity, (steps + 2) * len);
    if (r >= pow2) {
      System.arraycopy(buf, off, stage, 0, len);
      sync.signal(base + 1);
      int partner = r - pow2;
      sync.await(partner, done);
      System.arraycopy(sync.peers[partner].stage[parity], (steps + 1) * len, buf, off, len);
      sync.signal(done);
      return;
    }
    sync.signal(base + 1);
    if (r < extras) {
      sync.await(r + pow2, base + 1);
      Reduce.add(sync.peers[r + pow2].stage[parity], 0, buf, off, len);
    }
    for (int k = 0; k < steps; k++) {
      int partner = r ^ (1 << k);
      int region = (k + 1) * len;
      System.arraycopy(buf, off, stage, region, len);
      sync.signal(base + 2 + k);
      sync.await(partner, base + 2 + k);
      float[] theirs = sync.peers[partner].stage[parity];
      if (r < partner) {
        Reduce.add(theirs, region, buf, off, len);
      } else {
        Reduce.addFirst(theirs, region, buf, off, len);
      }
    }
    if (r < extras) {
      System.arraycopy(buf, off, stage, (steps + 1) * len, len);
    }
    sync.signal(done);
  }

  /**
   * Ring allreduce as NCCL runs it: the buffer is cut into n segments, each processed in rounds of
   * {@code chunk} elements. Per round a rank takes 2n-1 steps; at step o it handles segment (r-o)
   * mod n: step 0 sends its own input, steps 1..n-2 add its input to the left neighbour's partial
   * sum and pass it on, step n-1 completes segment r+1, and the remaining steps copy finished
   * segments around the ring. Data moves through each rank's FIFO of {@code slots} chunks: a rank
   * reads only its left neighbour's FIFO, and before overwriting a slot waits until its right
   * neighbour has read it, so ranks pipeline up to slots-1 steps apart.
   */
  @Override
  public void ring(float[] buf, int off, int len) {
    int n = sync.worldSize;
    int r = sync.rank;
    int leftRank = (r + n - 1) % n;
    int rightRank = (r + 1) % n;
    float[] mine = sync.self.fifo;
    float[] theirs = sync.peers[leftRank].fifo;
    int rounds = ((len + n - 1) / n + chunk - 1) / chunk;
    int lastStep = 2 * n - 2;
    long g = sync.progress();
    for (int round = 0; round < rounds; round++) {
      int lo = round * chunk;
      for (int o = 0; o <= lastStep; o++) {
        int seg = Math.floorMod(r - o, n);
        int cnt = Math.clamp(Splits.evenCount(len, n, seg) - lo, 0, chunk);
        int at = off + Splits.evenOffset(len, n, seg) + lo;
        if (o > 0) {
          sync.await(leftRank, g); // left finished step g-1, which filled our input slot
        }
        if (o < lastStep) {
          sync.await(rightRank, g - slots + 2); // right has read what slot g%slots held
        }
        int in = (int) ((g - 1) % slots) * chunk;
        int out = (int) (g % slots) * chunk;
        if (o == 0) {
          System.arraycopy(buf, at, mine, out, cnt);
        } else if (o < n - 1) {
          for (int i = 0; i < cnt; i++) {
            mine[out + i] = theirs[in + i] + buf[at + i];
          }
        } else if (o == n - 1) {
          for (int i = 0; i < cnt; i++) {
            float v = theirs[in + i] + buf[at + i];
            buf[at + i] = v;
            mine[out + i] = v;
          }
        } else {
          System.arraycopy(theirs, in, buf, at, cnt);
          if (o < lastStep) {
            System.arraycopy(theirs, in, mine, out, cnt);
          }
        }
        sync.signal(++g);
      }
    }
  }
}
