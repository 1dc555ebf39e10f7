package dev.ringmaster.parallel;

import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.locks.LockSupport;

/**
 * What one rank publishes to the others: its progress counter and its staging memory, the
 * in-process stand-in for a GPU's peer-mapped buffers and flags.
 *
 * <p>Only the owner writes anything here (except the waiter slots). It writes staging memory with
 * plain stores and then raises {@link #progress}; a reader that has seen the raised value (a
 * volatile read) therefore sees the data. Readers load a staging array reference only after such a
 * wait, and the owner replaces an array only when no peer can still be reading it.
 */
final class Peer {
  final int rank;

  /** Steps this rank has completed, counted over its lifetime; only ever grows. */
  volatile long progress;

  /** Threads parked waiting on {@link #progress}, one slot per waiting rank. */
  final AtomicReferenceArray<Thread> waiters;

  /** Two staging buffers, used by alternate staged collectives (see {@link RankSync}). */
  final float[][] stage = new float[2][];

  /** Per-destination counts an all-to-all publishes, one array per staging parity. */
  final int[][] counts;

  /** The ring FIFO: {@code ringSlots} chunks the right neighbour reads. */
  final float[] fifo;

  Peer(int rank, int worldSize, int fifoElements) {
    this.rank = rank;
    this.waiters = new AtomicReferenceArray<>(worldSize);
    this.counts = new int[2][worldSize];
    this.fifo = new float[fifoElements];
  }

  /** Raises progress to {@code value} and wakes the ranks parked on it. */
  void publish(long value) {
    progress = value;
    for (int i = 0; i < waiters.length(); i++) {
      Thread t = waiters.get(i);
      if (t != null) {
        LockSupport.unpark(t);
      }
    }
  }

  /** Wakes every parked waiter, so it notices an abort. */
  void wakeAll() {
    for (int i = 0; i < waiters.length(); i++) {
      Thread t = waiters.get(i);
      if (t != null) {
        LockSupport.unpark(t);
      }
    }
  }
}
