package dev.ringmaster.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.IntConsumer;

/**
 * A fixed set of platform threads that run parallel regions: {@link #run} hands out task indices to
 * the workers and the calling thread, and returns when all tasks are done.
 *
 * <p>Decode steps issue hundreds of short regions per token, so waking must be cheap: after a
 * region, workers spin briefly for the next one before parking. The caller waits only for tasks a
 * worker has claimed, never for a worker to wake up: on a busy machine a worker that is not
 * scheduled in time finds no tasks left and the caller has run the region alone, at the cost of a
 * serial run rather than of a scheduler time slice. Only one region runs at a time; a region
 * started from inside another one (or from a worker) runs serially on the caller.
 */
final class CpuThreadPool implements AutoCloseable {
  /** How long idle workers and a waiting caller spin before parking. */
  private static final long SPIN_NANOS = 50_000;

  /** Regions timed when the pool starts, after as many untimed ones. */
  private static final int TIMED_REGIONS = 200;

  private final Worker[] workers;
  private final ReentrantLock regionLock = new ReentrantLock();
  private volatile Region region;
  private volatile int generation;
  private volatile boolean closed;
  private final ParallelCostModel costModel;

  /**
   * One parallel region: its tasks, the next unclaimed index, how many claimed tasks have finished
   * (run, or skipped after a failure), the first failure and the thread waiting for the rest.
   */
  private static final class Region {
    final int tasks;
    final IntConsumer body;
    final Thread caller;
    final AtomicInteger next = new AtomicInteger();
    final AtomicInteger finished = new AtomicInteger();
    volatile Throwable failure;

    Region(int tasks, IntConsumer body, Thread caller) {
      this.tasks = tasks;
      this.body = body;
      this.caller = caller;
    }
  }

  private final class Worker extends Thread {
    Worker(int index) {
      super("ringmaster-cpu-" + index);
      setDaemon(true);
    }

    @Override
    public void run() {
      int seen = 0;
      while (true) {
        seen = awaitGeneration(seen);
        if (closed) {
          return;
        }
        // The region may already be over (and cleared, or replaced): then no task is left to
        // claim in the one read here.
        Region r = region;
        if (r != null) {
          work(r, true);
        }
      }
    }
  }

  /**
   * Starts {@code threads - 1} workers; the thread calling {@link #run} is the last participant.
   */
  CpuThreadPool(int threads) {
    if (threads < 1) {
      throw new IllegalArgumentException("threads must be at least 1, got " + threads);
    }
    workers = new Worker[threads - 1];
    for (int i = 0; i < workers.length; i++) {
      workers[i] = new Worker(i + 1);
      workers[i].start();
    }
    costModel = new ParallelCostModel(threads, workers.length == 0 ? 0 : measureRegionNanos());
  }

  /**
   * The median time of a region of one empty task per thread: what any parallel region costs on
   * this machine beyond its work (a few microseconds when the workers are spinning).
   */
  private double measureRegionNanos() {
    long[] times = new long[TIMED_REGIONS];
    int tasks = threads();
    for (int k = -TIMED_REGIONS; k < TIMED_REGIONS; k++) {
      long t0 = System.nanoTime();
      run(tasks, i -> {});
      if (k >= 0) {
        times[k] = System.nanoTime() - t0;
      }
    }
    java.util.Arrays.sort(times);
    return times[TIMED_REGIONS / 2];
  }

  /** When products are worth this pool's threads. */
  ParallelCostModel costModel() {
    return costModel;
  }

  /** Whether the workers may read {@code segment} (a confined arena's segments they may not). */
  boolean canShare(MemorySegment segment) {
    return workers.length == 0 || segment.isAccessibleBy(workers[0]);
  }

  /** Number of threads that run a region, the caller included. */
  int threads() {
    return workers.length + 1;
  }

  /**
   * Runs {@code body.accept(i)} for every {@code 0 <= i < tasks}, in parallel, and waits; returns
   * whether the workers took part (false where the caller ran every task, serially or because no
   * worker came in time).
   */
  boolean run(int tasks, IntConsumer body) {
    if (tasks <= 0) {
      return false;
    }
    if (workers.length == 0
        || tasks == 1
        || Thread.currentThread() instanceof Worker
        || regionLock.isHeldByCurrentThread()) {
      for (int i = 0; i < tasks; i++) {
        body.accept(i);
      }
      return false;
    }
    regionLock.lock();
    try {
      if (closed) {
        throw new IllegalStateException("CPU thread pool is closed");
      }
      Region r = new Region(tasks, body, Thread.currentThread());
      region = r;
      generation = generation + 1; // publishes region: workers read it after seeing the change
      for (Worker w : workers) {
        LockSupport.unpark(w);
      }
      boolean alone = work(r, false) == tasks;
      awaitFinished(r);
      region = null;
      Throwable failure = r.failure;
      if (failure instanceof RuntimeException e) {
        throw e;
      } else if (failure instanceof Error e) {
        throw e;
      } else if (failure != null) {
        throw new IllegalStateException(failure);
      }
      return !alone;
    } finally {
      regionLock.unlock();
    }
  }

  /**
   * Claims and runs tasks of {@code r} until none is left and returns how many it claimed; a worker
   * that finishes the region's last task wakes the caller. After a failure the remaining tasks are
   * claimed but skipped.
   */
  private static int work(Region r, boolean worker) {
    int i;
    int claimed = 0;
    while ((i = r.next.getAndIncrement()) < r.tasks) {
      if (r.failure == null) {
        try {
          r.body.accept(i);
        } catch (Throwable t) {
          if (r.failure == null) {
            r.failure = t;
          }
        }
      }
      claimed++;
      if (r.finished.incrementAndGet() == r.tasks && worker) {
        LockSupport.unpark(r.caller);
      }
    }
    return claimed;
  }

  private int awaitGeneration(int seen) {
    long deadline = System.nanoTime() + SPIN_NANOS;
    int spins = 0;
    int g;
    while ((g = generation) == seen && !closed) {
      if (deadline != 0) {
        Thread.onSpinWait();
        if ((++spins & 255) == 0 && System.nanoTime() > deadline) {
          deadline = 0;
        }
      } else {
        LockSupport.park(this);
      }
    }
    return g;
  }

  /** Waits until every task of {@code r} has finished, some perhaps on a worker. */
  private void awaitFinished(Region r) {
    long deadline = System.nanoTime() + SPIN_NANOS;
    int spins = 0;
    while (r.finished.get() != r.tasks) {
      if (deadline != 0) {
        Thread.onSpinWait();
        if ((++spins & 255) == 0 && System.nanoTime() > deadline) {
          deadline = 0;
        }
      } else {
        LockSupport.park(this);
      }
    }
  }

  /** Stops the workers after any running region; later {@link #run} calls fail. */
  @Override
  public void close() {
    regionLock.lock();
    try {
      closed = true;
    } finally {
      regionLock.unlock();
    }
    for (Worker w : workers) {
      LockSupport.unpark(w);
    }
    for (Worker w : workers) {
      try {
        w.join();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }
}
