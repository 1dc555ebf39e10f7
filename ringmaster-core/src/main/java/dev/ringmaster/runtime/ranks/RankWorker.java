package dev.ringmaster.runtime.ranks;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;

/**
 * Where one rank's part of every step runs: a thread that runs submitted work in order. A rank of
 * CPU collectives gets a platform thread of its own ({@link #ownThread}); a GPU rank runs on the
 * thread that already drives its GPU ({@link #borrowed}), so a step costs no extra thread hop; a
 * remote node is a local thread that sends the step and waits for the node's answer.
 */
public interface RankWorker extends AutoCloseable {
  /**
   * Queues {@code task} to run on this rank's thread after the work already queued there.
   *
   * @throws RejectedExecutionException when the worker has been closed
   */
  void execute(Runnable task);

  /**
   * Stops the worker: queued work still runs, no new work is accepted. {@code interrupt} also
   * interrupts the thread (used when a rank is known to be stuck). Idempotent; does nothing for a
   * borrowed thread, which its owner closes.
   */
  void close(boolean interrupt);

  /** {@link #close(boolean) close(false)}. */
  @Override
  default void close() {
    close(false);
  }

  /** A daemon platform thread named {@code name}, owned (and stopped) by this worker. */
  static RankWorker ownThread(String name) {
    ExecutorService e =
        Executors.newSingleThreadExecutor(
            r -> Thread.ofPlatform().daemon().name(name).unstarted(r));
    return new RankWorker() {
      @Override
      public void execute(Runnable task) {
        e.execute(task);
      }

      @Override
      public void close(boolean interrupt) {
        if (interrupt) {
          e.shutdownNow();
        } else {
          e.shutdown();
        }
      }
    };
  }

  /**
   * Work runs on {@code thread}, a single-threaded executor someone else owns (a GPU's thread);
   * closing the worker leaves it running.
   */
  static RankWorker borrowed(java.util.concurrent.Executor thread) {
    return new RankWorker() {
      @Override
      public void execute(Runnable task) {
        thread.execute(task);
      }

      @Override
      public void close(boolean interrupt) {
        // the owner stops the thread
      }
    };
  }
}
