package dev.ringmaster.backend.cpu;

import java.util.function.IntConsumer;

/**
 * A parallel loop that goes to its context's thread pool only when splitting it pays, judged by its
 * own {@link ParallelCostModel}: the rate of its work in the caller's cost units (learned from its
 * serial runs) against what its parallel regions cost beyond their share of work. One instance
 * serves one kind of loop whose cost units mean the same thing at every call, for example the
 * attention of one model (position-head pairs weighted by their arithmetic). Where a loop runs
 * never changes what it computes, so results do not depend on the plan.
 */
public final class CostedLoop {
  private final CpuThreadPool pool;
  private final ParallelCostModel model;

  /**
   * A loop on {@code kernels}' pool with nothing learned yet: its first runs are serial, to time
   * its rate; its region cost starts from the pool's.
   */
  public CostedLoop(CpuKernelContext kernels) {
    this.pool = kernels.pool();
    this.model = new ParallelCostModel(pool.threads(), pool.costModel().regionNanos());
  }

  /**
   * Runs {@code body.accept(i)} for every {@code 0 <= i < tasks}, on the pool or serially on the
   * calling thread, and returns when all are done; the first exception a task throws is rethrown.
   *
   * @param cost the loop's work in this loop's units (positive; the same units at every call)
   */
  public void run(int tasks, double cost, IntConsumer body) {
    long t0 = System.nanoTime();
    boolean shared = false;
    if (model.parallel(cost)) {
      shared = pool.run(tasks, body);
    } else {
      for (int i = 0; i < tasks; i++) {
        body.accept(i);
      }
    }
    model.observe(cost, System.nanoTime() - t0, shared);
  }
}
