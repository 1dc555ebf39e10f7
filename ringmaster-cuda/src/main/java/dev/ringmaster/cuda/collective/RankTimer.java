package dev.ringmaster.cuda.collective;

import dev.ringmaster.cuda.driver.CudaEvent;
import dev.ringmaster.cuda.driver.CudaGraph;
import dev.ringmaster.cuda.driver.CudaStream;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.CyclicBarrier;

/**
 * Times one collective as nccl-tests does: every rank starts each iteration together (host
 * barrier), the time is read by CUDA events on the rank's stream, an iteration takes as long as its
 * slowest rank, and the median over iterations is reported.
 *
 * <p>An iteration may queue a batch of back-to-back collectives and report the time per collective:
 * the ranks leave the host barrier microseconds apart (thread wake-up, launch calls), and a rank
 * that starts first waits for the others inside the collective, so one collective per iteration
 * measures that skew more than the transfer. With {@code graph} the batch is captured once per rank
 * and replayed as one CUDA graph, which is how decode steps issue their collectives (no host launch
 * cost between them).
 */
public final class RankTimer {
  private RankTimer() {}

  /**
   * Collectives per timed iteration for messages of {@code bytes}: up to 32 while a batch moves at
   * most 32 MiB, so small messages are timed over many and large ones (where the skew is noise) do
   * not take long.
   */
  public static int batchFor(long bytes) {
    return (int) Math.max(1, Math.min(32, (32L << 20) / Math.max(1, bytes)));
  }

  /** One rank's step (called on its GPU thread). */
  @FunctionalInterface
  public interface Step {
    /** Queues work of local rank {@code local} on {@code stream}. */
    void run(int local, NcclCommunicator comm, CudaStream stream);
  }

  /**
   * Runs {@code prepare} (untimed) then {@code batch} back-to-back {@code op}s (timed; captured in
   * one CUDA graph per rank and replayed when {@code graph}) {@code warmup + iterations} times on
   * every rank; returns the median over iterations of the slowest rank's time per {@code op}, in
   * microseconds. {@code streams.get(i)} is local rank i's stream.
   */
  public static double medianMicros(
      DeviceWorld world,
      List<CudaStream> streams,
      Step prepare,
      Step op,
      int warmup,
      int iterations,
      int batch,
      boolean graph) {
    if (batch < 1) {
      throw new IllegalArgumentException("batch must be positive: " + batch);
    }
    int n = world.localSize();
    CyclicBarrier together = new CyclicBarrier(n);
    List<double[]> perRank =
        world.run(
            (local, comm) -> {
              CudaStream s = streams.get(local);
              Runnable queue =
                  () -> {
                    for (int k = 0; k < batch; k++) {
                      op.run(local, comm, s);
                    }
                  };
              if (graph) {
                // One eager batch first: NCCL connects to its peers on a communicator's first
                // operations, which a stream under capture does not permit.
                prepare.run(local, comm, s);
                queue.run();
                s.synchronize();
              }
              double[] t = new double[iterations];
              try (CudaEvent start = CudaEvent.create();
                  CudaEvent end = CudaEvent.create();
                  CudaGraph g = graph ? s.capture(queue) : null) {
                for (int it = 0; it < warmup + iterations; it++) {
                  prepare.run(local, comm, s);
                  s.synchronize();
                  await(together);
                  start.record(s);
                  if (g != null) {
                    g.launch(s);
                  } else {
                    queue.run();
                  }
                  end.record(s);
                  end.synchronize();
                  if (it >= warmup) {
                    t[it - warmup] = 1000.0 * end.millisSince(start) / batch;
                  }
                }
              }
              return t;
            });
    double[] slowest = new double[iterations];
    for (double[] t : perRank) {
      for (int i = 0; i < iterations; i++) {
        slowest[i] = Math.max(slowest[i], t[i]);
      }
    }
    Arrays.sort(slowest);
    int m = iterations / 2;
    return iterations % 2 == 1 ? slowest[m] : (slowest[m - 1] + slowest[m]) / 2;
  }

  private static void await(CyclicBarrier b) {
    try {
      b.await();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    } catch (BrokenBarrierException e) {
      throw new IllegalStateException("another rank failed", e);
    }
  }
}
