package dev.ringmaster.parallel.tcp;

import dev.ringmaster.parallel.AllReduceSteps;
import dev.ringmaster.parallel.Splits;

/**
 * The allreduce algorithms over sockets, each summing in the same order as the in-process world's
 * version of it (so a TCP world and a {@link dev.ringmaster.parallel.LocalWorld} give the same
 * bits): ring around the ring starting after the segment's owner, one-shot and two-shot in rank
 * order, recursive doubling along its fixed pairing tree.
 */
final class TcpAllReduce implements AllReduceSteps {
  private final TcpProcessGroup g;

  TcpAllReduce(TcpProcessGroup g) {
    this.g = g;
  }

  /**
   * Ring: n segments, 2n-1 steps. At step o a rank handles segment (r-o) mod n: step 0 sends its
   * own input, steps 1..n-2 add their input to the left neighbour's partial sum and pass it right,
   * step n-1 completes segment r+1, and the remaining steps pass finished segments around. Each
   * link carries 2(n-1)/n of the buffer, the bandwidth-optimal amount.
   */
  @Override
  public void ring(float[] buf, int off, int len) {
    int n = g.worldSize();
    int r = g.rank();
    int left = (r + n - 1) % n;
    int right = (r + 1) % n;
    float[] in = g.scratchA(Splits.evenCount(len, n, 0));
    int lastStep = 2 * n - 2;
    for (int o = 0; o <= lastStep; o++) {
      int seg = Math.floorMod(r - o, n);
      int cnt = Splits.evenCount(len, n, seg);
      int at = off + Splits.evenOffset(len, n, seg);
      if (o == 0) {
        g.send(right, buf, at, cnt);
        continue;
      }
      g.recv(left, in, 0, cnt);
      if (o < n - 1) {
        for (int i = 0; i < cnt; i++) {
          in[i] = in[i] + buf[at + i];
        }
        g.send(right, in, 0, cnt);
      } else if (o == n - 1) {
        for (int i = 0; i < cnt; i++) {
          buf[at + i] = in[i] + buf[at + i];
        }
        g.send(right, buf, at, cnt);
      } else {
        System.arraycopy(in, 0, buf, at, cnt);
        if (o < lastStep) {
          g.send(right, buf, at, cnt);
        }
      }
    }
  }

  /** One-shot: every rank sends its whole buffer to every other and sums all in rank order. */
  @Override
  public void oneShot(float[] buf, int off, int len) {
    int n = g.worldSize();
    for (int d = 0; d < n; d++) {
      if (d != g.rank()) {
        g.send(d, buf, off, len);
      }
    }
    float[] acc = g.scratchA(len);
    g.sumInRankOrder(buf, off, acc, g.scratchB(len), len);
    System.arraycopy(acc, 0, buf, off, len);
  }

  /**
   * Two-shot: rank r receives slice r of every buffer and sums it in rank order, then every rank
   * sends its reduced slice to every other (half of one-shot's traffic per rank, one more round).
   */
  @Override
  public void twoShot(float[] buf, int off, int len) {
    int n = g.worldSize();
    int r = g.rank();
    for (int d = 0; d < n; d++) {
      if (d != r) {
        g.send(d, buf, off + Splits.evenOffset(len, n, d), Splits.evenCount(len, n, d));
      }
    }
    int mine = off + Splits.evenOffset(len, n, r);
    int cnt = Splits.evenCount(len, n, r);
    float[] acc = g.scratchA(cnt);
    g.sumInRankOrder(buf, mine, acc, g.scratchB(cnt), cnt);
    System.arraycopy(acc, 0, buf, mine, cnt);
    for (int d = 0; d < n; d++) {
      if (d != r) {
        g.send(d, buf, mine, cnt);
      }
    }
    for (int s = 0; s < n; s++) {
      if (s != r) {
        g.recv(s, buf, off + Splits.evenOffset(len, n, s), Splits.evenCount(len, n, s));
      }
    }
  }

  /**
   * Recursive doubling over the largest power of two P <= n: ranks at or above P first hand their
   * data to rank r-P and at the end receive its result; partners add the lower rank's operand
   * first, so both hold the same sum.
   */
  @Override
  public void recursiveDoubling(float[] buf, int off, int len) {
    int n = g.worldSize();
    int r = g.rank();
    int pow2 = Integer.highestOneBit(n);
    int extras = n - pow2;
    if (r >= pow2) {
      g.send(r - pow2, buf, off, len);
      g.recv(r - pow2, buf, off, len);
      return;
    }
    float[] tmp = g.scratchA(len);
    if (r < extras) {
      g.recv(r + pow2, tmp, 0, len);
      for (int i = 0; i < len; i++) {
        buf[off + i] = buf[off + i] + tmp[i];
      }
    }
    for (int step = 1; step < pow2; step <<= 1) {
      int partner = r ^ step;
      g.send(partner, buf, off, len);
      g.recv(partner, tmp, 0, len);
      if (r < partner) {
        for (int i = 0; i < len; i++) {
          buf[off + i] = buf[off + i] + tmp[i];
        }
      } else {
        for (int i = 0; i < len; i++) {
          buf[off + i] = tmp[i] + buf[off + i];
        }
      }
    }
    if (r < extras) {
      g.send(r + pow2, buf, off, len);
    }
  }
}
