package dev.ringmaster.parallel.tcp;

import dev.ringmaster.parallel.AllReduceAlgorithm;
import dev.ringmaster.parallel.AllReduceTable;
import dev.ringmaster.parallel.CheckedProcessGroup;
import dev.ringmaster.parallel.CollectiveException;
import dev.ringmaster.parallel.CollectiveOp;
import dev.ringmaster.parallel.Splits;
import java.io.IOException;
import java.net.SocketTimeoutException;

/**
 * One rank of a {@link TcpWorld}. Every collective first queues everything this rank sends (the
 * links' writer threads move it), then reads what it needs, in a fixed order; each frame carries
 * the collective's kind and sequence number, so ranks that call different collectives fail with a
 * message instead of reading each other's data. Sums run in the in-process world's orders (rank
 * order, or around the ring), so every rank ends with the same bits.
 */
final class TcpProcessGroup extends CheckedProcessGroup {
  private final TcpWorld world;
  private final int rank;
  private final int size;
  private final Link[] links;
  private final TcpWorldConfig config;
  private final TcpAllReduce allReduce;
  private final int[] header = new int[3];
  private CollectiveOp op = CollectiveOp.BARRIER;
  private int seq;
  private float[] scratchA = new float[0];
  private float[] scratchB = new float[0];

  TcpProcessGroup(TcpWorld world, int rank, Link[] links, TcpWorldConfig config) {
    this.world = world;
    this.rank = rank;
    this.size = config.worldSize();
    this.links = links;
    this.config = config;
    this.allReduce = new TcpAllReduce(this);
  }

  @Override
  public int rank() {
    return rank;
  }

  @Override
  public int worldSize() {
    return size;
  }

  @Override
  public AllReduceAlgorithm allReduceAlgorithm() {
    return config.algorithm();
  }

  // ---- transport, used by the algorithms ----

  @Override
  protected void begin(CollectiveOp op) {
    CollectiveException aborted = world.abortedException(rank, op);
    if (aborted != null) {
      throw aborted;
    }
    this.op = op;
    seq++;
  }

  void send(int peer, float[] src, int off, int len) {
    links[peer].sendFloats(op.ordinal(), seq, src, off, len);
  }

  /** Receives exactly {@code len} floats from {@code peer} into {@code dst[off...]}. */
  void recv(int peer, float[] dst, int off, int len) {
    int count = recvHeader(peer);
    if (count != len) {
      throw fail(
          new IllegalArgumentException(
              String.format(
                  "rank %d: %s #%d: rank %d sent %d values, this rank expects %d (lengths differ"
                      + " between ranks)",
                  rank, op, seq, peer, count, len)));
    }
    try {
      links[peer].readFloats(dst, off, len);
    } catch (IOException e) {
      throw lost(peer, e);
    }
  }

  /** Reads the next frame's header from {@code peer}, checks it belongs here, returns its count. */
  private int recvHeader(int peer) {
    try {
      links[peer].readHeader(header);
    } catch (IOException e) {
      throw lost(peer, e);
    }
    if (header[0] != op.ordinal() || header[1] != seq) {
      String theirs =
          header[0] >= 0 && header[0] < CollectiveOp.values().length
              ? CollectiveOp.values()[header[0]].toString()
              : "op " + header[0];
      throw fail(
          new IllegalStateException(
              String.format(
                  "rank %d expected %s #%d from rank %d but got %s #%d: the ranks called different"
                      + " collectives",
                  rank, op, seq, peer, theirs, header[1])));
    }
    return header[2];
  }

  /** A broken or silent connection: abort the world (unless it already is) and say why. */
  private CollectiveException lost(int peer, IOException e) {
    CollectiveException aborted = world.abortedException(rank, op);
    if (aborted != null) {
      return aborted;
    }
    String what =
        e instanceof SocketTimeoutException
            ? String.format(
                "timed out after %d ms in %s #%d waiting for rank %d (%s)",
                config.timeout().toMillis(), op, seq, peer, world.describeNode(peer))
            : String.format(
                "lost the connection to rank %d (%s) in %s #%d: %s",
                peer, world.describeNode(peer), op, seq, e.getMessage());
    return fail(new CollectiveException("rank " + rank + ": " + what, e));
  }

  /** Aborts the world with {@code cause} (peers must not wait for this rank) and returns it. */
  private CollectiveException fail(RuntimeException cause) {
    world.abort(rank, cause);
    return cause instanceof CollectiveException c
        ? c
        : new CollectiveException(cause.getMessage(), cause);
  }

  float[] scratchA(int len) {
    if (scratchA.length < len) {
      scratchA = new float[len];
    }
    return scratchA;
  }

  float[] scratchB(int len) {
    if (scratchB.length < len) {
      scratchB = new float[len];
    }
    return scratchB;
  }

  /**
   * Sums rank-ordered contributions into {@code acc[0, len)}: {@code ((x0 + x1) + x2) + ...}, with
   * this rank's part read from {@code mine[mineOff...]} and every other rank's received into {@code
   * tmp}. The peers' frames must already be on their way.
   */
  void sumInRankOrder(float[] mine, int mineOff, float[] acc, float[] tmp, int len) {
    for (int s = 0; s < size; s++) {
      float[] src = mine;
      int at = mineOff;
      if (s != rank) {
        recv(s, tmp, 0, len);
        src = tmp;
        at = 0;
      }
      if (s == 0) {
        System.arraycopy(src, at, acc, 0, len);
      } else {
        for (int i = 0; i < len; i++) {
          acc[i] += src[at + i];
        }
      }
    }
  }

  // ---- collectives (checks, stats and the trivial cases are CheckedProcessGroup's) ----

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
    for (int d = 0; d < size; d++) {
      if (d != rank) {
        send(d, send, sendOff, len); // serialized now: send may lie inside recv
      }
    }
    System.arraycopy(send, sendOff, recv, rank * len, len);
    for (int s = 0; s < size; s++) {
      if (s != rank) {
        recv(s, recv, s * len, len);
      }
    }
  }

  @Override
  protected void scatterSums(float[] send, float[] recv, int[] counts, int total) {
    for (int d = 0; d < size; d++) {
      if (d != rank) {
        send(d, send, Splits.prefix(counts, d), counts[d]);
      }
    }
    int mine = counts[rank];
    float[] acc = scratchA(mine);
    sumInRankOrder(send, Splits.prefix(counts, rank), acc, scratchB(mine), mine);
    System.arraycopy(acc, 0, recv, 0, mine);
  }

  @Override
  protected void exchange(float[] send, int[] sendCounts, float[] recv, int[] recvCounts) {
    for (int d = 0; d < size; d++) {
      if (d != rank) {
        send(d, send, Splits.prefix(sendCounts, d), sendCounts[d]);
      }
    }
    if (sendCounts[rank] != recvCounts[rank]) {
      throw fail(countMismatch(rank, sendCounts[rank], recvCounts[rank]));
    }
    System.arraycopy(
        send,
        Splits.prefix(sendCounts, rank),
        recv,
        Splits.prefix(recvCounts, rank),
        sendCounts[rank]);
    int at = 0;
    for (int s = 0; s < size; s++) {
      if (s != rank) {
        int count = recvHeader(s);
        if (count != recvCounts[s]) {
          throw fail(countMismatch(s, count, recvCounts[s]));
        }
        try {
          links[s].readFloats(recv, at, count);
        } catch (IOException e) {
          throw lost(s, e);
        }
      }
      at += recvCounts[s];
    }
  }

  @Override
  protected void exchangeCountsWithPeers(int[] sendCounts, int[] recvCounts) {
    for (int d = 0; d < size; d++) {
      if (d != rank) {
        links[d].sendInts(op.ordinal(), seq, sendCounts, d, 1);
      }
    }
    recvCounts[rank] = sendCounts[rank];
    for (int s = 0; s < size; s++) {
      if (s != rank) {
        int count = recvHeader(s);
        if (count != 1) {
          throw fail(
              new IllegalStateException(
                  "rank " + rank + ": rank " + s + " sent " + count + " counts, expected 1"));
        }
        try {
          links[s].readInts(recvCounts, s, 1);
        } catch (IOException e) {
          throw lost(s, e);
        }
      }
    }
  }

  @Override
  protected void broadcastFrom(float[] buf, int off, int len, int root) {
    if (rank == root) {
      for (int d = 0; d < size; d++) {
        if (d != rank) {
          send(d, buf, off, len);
        }
      }
    } else {
      recv(root, buf, off, len);
    }
  }

  @Override
  protected void meet() {
    for (int d = 0; d < size; d++) {
      if (d != rank) {
        send(d, scratchA, 0, 0);
      }
    }
    for (int s = 0; s < size; s++) {
      if (s != rank) {
        recv(s, scratchA, 0, 0);
      }
    }
  }
}
