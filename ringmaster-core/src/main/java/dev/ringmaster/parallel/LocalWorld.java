package dev.ringmaster.parallel;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A group of ranks inside one JVM. Each rank's {@link ProcessGroup} is driven by its own platform
 * thread; {@link #run} and {@link #call} start those threads. Ranks exchange data only through
 * per-rank staging buffers and progress flags, so the algorithms run step by step as between GPUs.
 *
 * <p>If any rank fails, the world is aborted: ranks waiting in a collective wake and throw {@link
 * CollectiveException}, and every later collective throws at once. A rank that simply never arrives
 * makes the others fail after the configured timeout.
 */
public final class LocalWorld implements LocalRanks {
  private final LocalWorldConfig config;
  private final Peer[] peers;
  private final List<ProcessGroup> groups;
  private final AtomicReference<WorldFailure> failure = new AtomicReference<>();

  private LocalWorld(LocalWorldConfig config) {
    this.config = config;
    int n = config.worldSize();
    int fifo = n == 1 ? 0 : Math.multiplyExact(config.chunkElements(), config.ringSlots());
    this.peers = new Peer[n];
    for (int r = 0; r < n; r++) {
      peers[r] = new Peer(r, n, fifo);
    }
    List<ProcessGroup> g = new ArrayList<>(n);
    for (int r = 0; r < n; r++) {
      g.add(new LocalProcessGroup(new RankSync(this, peers, r, config), config));
    }
    this.groups = List.copyOf(g);
  }

  /**
   * A world of {@code worldSize} ranks using {@code algorithm} for allreduce, defaults otherwise.
   */
  public static LocalWorld create(int worldSize, AllReduceAlgorithm algorithm) {
    return create(LocalWorldConfig.of(worldSize, algorithm));
  }

  /** A world with the given settings. */
  public static LocalWorld create(LocalWorldConfig config) {
    return new LocalWorld(config);
  }

  /** The settings. */
  public LocalWorldConfig config() {
    return config;
  }

  /** Number of ranks. */
  public int worldSize() {
    return peers.length;
  }

  /** Rank {@code r}'s group; use it only from the thread that drives rank r. */
  public ProcessGroup group(int r) {
    return groups.get(r);
  }

  /** All ranks' groups, by rank. */
  @Override
  public List<ProcessGroup> groups() {
    return groups;
  }

  /** Work one rank does. */
  @FunctionalInterface
  public interface RankTask {
    /** Runs on the rank's own thread. */
    void run(ProcessGroup group) throws Exception;
  }

  /** Work one rank does, with a result. */
  @FunctionalInterface
  public interface RankFunction<T> {
    /** Runs on the rank's own thread. */
    T apply(ProcessGroup group) throws Exception;
  }

  /**
   * Runs {@code task} on every rank, each on a new platform thread, and waits for all.
   *
   * @throws CollectiveException if any rank failed; its cause is the first failure (the root, not
   *     the peers' consequent aborts), the other ranks' exceptions are suppressed into it
   */
  public void run(RankTask task) {
    call(
        g -> {
          task.run(g);
          return null;
        });
  }

  /** As {@link #run}, returning each rank's result, by rank. */
  @Override
  public <T> List<T> call(RankFunction<T> fn) {
    int n = peers.length;
    Object[] results = new Object[n];
    Throwable[] errors = new Throwable[n];
    Thread[] threads = new Thread[n];
    for (int r = 0; r < n; r++) {
      int rank = r;
      threads[r] =
          Thread.ofPlatform()
              .name("ringmaster-rank-" + r)
              .start(
                  () -> {
                    try {
                      results[rank] = fn.apply(groups.get(rank));
                    } catch (Throwable t) {
                      errors[rank] = t;
                      abort(rank, t);
                    }
                  });
    }
    joinAll(threads);
    return WorldFailure.resultsOrThrow(results, errors, failure.get());
  }

  private void joinAll(Thread[] threads) {
    for (Thread t : threads) {
      try {
        t.join();
      } catch (InterruptedException e) {
        // Stop the ranks rather than leave them running unobserved, then report.
        abort(-1, e);
        for (Thread u : threads) {
          u.interrupt();
        }
        Thread.currentThread().interrupt();
        throw new CollectiveException("interrupted while waiting for ranks", e);
      }
    }
  }

  /**
   * Aborts the world: ranks waiting in collectives throw, and so will every later collective. The
   * first abort's cause is kept; later ones are ignored.
   *
   * @param rank the rank that failed, or -1 for an outside cause
   */
  @Override
  public void abort(int rank, Throwable cause) {
    if (failure.compareAndSet(null, new WorldFailure(rank, cause))) {
      for (Peer p : peers) {
        p.wakeAll();
      }
    }
  }

  /** Whether the world has been aborted. */
  public boolean isAborted() {
    return failure.get() != null;
  }

  void throwIfAborted(int rank, CollectiveOp op) {
    WorldFailure f = failure.get();
    if (f != null) {
      String who =
          f.rank() < 0 ? "an outside caller" : f.rank() == rank ? "this rank" : "rank " + f.rank();
      throw new CollectiveException(
          "rank " + rank + ": " + op + " aborted because " + who + " failed: " + f.cause(),
          f.cause());
    }
  }
}
